"""Spark servers the suite starts from pyspark's own distribution, on loopback only: a Spark
Connect server (`sbin/start-connect-server.sh --wait`) and a standalone master with one worker
(`bin/spark-class ...Master` / `...Worker`). Each runs in its own process group and is stopped
with it; logs go to the test's temporary directory (named in every failure)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HOST = "127.0.0.1"


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((HOST, port)) == 0


@dataclass
class Server:
    name: str
    process: subprocess.Popen
    log: Path
    url: str

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.process.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _env(workdir: Path, python: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        PYSPARK_PYTHON=python,
        SPARK_LOG_DIR=str(workdir),
        SPARK_PID_DIR=str(workdir),
        SPARK_LOCAL_IP=HOST,
        SPARK_NO_DAEMONIZE="1",
    )
    env.pop("SPARK_REMOTE", None)
    env.pop("SPARK_CONNECT_MODE_ENABLED", None)
    return env


def _start(name: str, cmd: list[str], workdir: Path, python: str, port: int, url: str, timeout: float = 180) -> Server:
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"{name}.log"
    handle = log.open("wb")
    process = subprocess.Popen(
        cmd, cwd=workdir, env=_env(workdir, python), stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
    )
    server = Server(name, process, log, url)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} exited with {process.returncode}; log {log}:\n{server.tail()}")
        if _listening(port):
            return server
        time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"{name} did not listen on {HOST}:{port} within {timeout:.0f} s; log {log}:\n{server.tail()}")


def start_connect_server(workdir: Path, *, python: str = sys.executable, master: str = "local[2]") -> Server:
    """A Spark Connect server on a free loopback port (its Python workers run `python`)."""
    port = free_port()
    home = spark_home()
    cmd = [
        str(home / "sbin" / "start-connect-server.sh"),
        "--wait",
        "--master",
        master,
        "--driver-memory",
        "2g",
        "--conf",
        f"spark.connect.grpc.binding.address={HOST}",
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        f"spark.driver.host={HOST}",
        "--conf",
        "spark.ui.enabled=false",
        "--conf",
        "spark.sql.shuffle.partitions=2",
        "--conf",
        "spark.default.parallelism=2",
        "--conf",
        "spark.sql.session.timeZone=UTC",
        "--conf",
        "spark.sql.execution.arrow.pyspark.enabled=true",
        "--conf",
        "spark.connect.progress.reportInterval=100ms",  # default 2 s: a warm test query finishes before any report
    ]
    return _start("spark-connect", cmd, workdir, python, port, f"sc://{HOST}:{port}")


def start_standalone(workdir: Path, *, python: str = sys.executable, cores: int = 2, memory: str = "2g") -> tuple[Server, Server]:
    """A standalone master and one worker on loopback; (master, worker), master.url is spark://..."""
    home = spark_home()
    port, ui, worker_ui = free_port(), free_port(), free_port()
    master = _start(
        "spark-master",
        [
            str(home / "bin" / "spark-class"),
            "org.apache.spark.deploy.master.Master",
            "--host",
            HOST,
            "--port",
            str(port),
            "--webui-port",
            str(ui),
        ],
        workdir,
        python,
        port,
        f"spark://{HOST}:{port}",
    )
    try:
        worker = _start(
            "spark-worker",
            [
                str(home / "bin" / "spark-class"),
                "org.apache.spark.deploy.worker.Worker",
                "--host",
                HOST,
                "--cores",
                str(cores),
                "--memory",
                memory,
                "--webui-port",
                str(worker_ui),
                "--work-dir",
                str(workdir / "work"),
                master.url,
            ],
            workdir,
            python,
            worker_ui,
            master.url,
        )
    except BaseException:
        master.stop()
        raise
    return master, worker


def python_without_deltaexplore(workdir: Path) -> str:
    """An executable running this interpreter with `deltaexplore` made unimportable (a
    `sitecustomize` drops it from the import system): the Python of executors that have only
    pyspark, pyarrow and numpy."""
    site = workdir / "no-deltaexplore"
    site.mkdir(parents=True, exist_ok=True)
    (site / "sitecustomize.py").write_text(
        "import sys\n"
        "class _Hide:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'deltaexplore' or name.startswith('deltaexplore.'):\n"
        "            raise ModuleNotFoundError(\"No module named 'deltaexplore'\", name=name)\n"
        "        return None\n"
        "sys.meta_path.insert(0, _Hide())\n"
    )
    wrapper = workdir / "python-without-deltaexplore"
    wrapper.write_text(f'#!/bin/sh\nPYTHONPATH="{site}${{PYTHONPATH:+:$PYTHONPATH}}" exec "{sys.executable}" "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)
