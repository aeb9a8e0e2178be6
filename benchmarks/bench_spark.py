"""Spark layer benchmark: reported, never asserted.

1. `dx.spark.read` of a table with deletion vectors vs `spark.read.parquet` of the same files
   (the same rows before the DVs; target: at most 1.2x the plain parquet read). Each read is
   executed with the `noop` sink (every column materialized, nothing collected), best of 3.
2. OPTIMIZE throughput (MB/s of input) on a local table of many small files (1 GB by default).
3. `--only cluster`: on a standalone cluster (a master and a worker with 2 cores on loopback,
   started from pyspark's distribution): the DV read on 10M rows in 300 files with a DV on every
   file vs `spark.read.parquet` (median of 3, interleaved), the planning time of a read of 2,000
   files with DVs as the user meets it (`dx.spark.read(...)` called until the DataFrame is
   returned, no action: wall and driver CPU seconds, Spark jobs started), and MERGE of 1M
   source rows (half updates, half inserts) into 10M target rows: the local engine, Spark and
   delta-rs on copies of the same table.

Tables are generated under benchmarks/tables/ (git-ignored); results go to
benchmarks/results/spark.md.

`--only plan`: the planning measurement of part 3 alone (its own standalone cluster and table);
the other cluster figures keep their last result.

    python benchmarks/bench_spark.py [--read-rows 20000000] [--optimize-mb 1024] [--only read|optimize|cluster|plan]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import deltaexplore as dx
import deltaexplore.spark as dxs

HERE = Path(__file__).resolve().parent
TABLES = HERE / "tables"
RESULTS = HERE / "results"


def _data(spark, rows: int, files: int):
    from pyspark.sql import functions as F  # noqa: TID251 - benchmark of the Spark layer

    return (
        spark.range(0, rows, numPartitions=files)
        .withColumn("x", F.rand(seed=1))
        .withColumn("y", (F.rand(seed=2) * 1000).cast("int"))
        .withColumn("s", F.sha2(F.col("id").cast("string"), 256).substr(1, 24))
    )


def _best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def bench_read(spark, rows: int) -> dict:
    root = TABLES / "spark_dv"
    shutil.rmtree(root, ignore_errors=True)
    conf = {"delta.enableDeletionVectors": "true"}
    dxs.write(spark, _data(spark, rows, 16), str(root), configuration=conf, target_file_size=64 << 20)
    dxs.delete(spark, str(root), "y < 100")  # ~10% of the rows of every file, as DVs
    snap = dx.open_table(str(root)).snapshot()
    files = snap.add_actions()
    with_dv = sum(1 for d in files.column("deletionVector").to_pylist() if d)
    locations = [f"file://{root}/{p}" for p in files.column("path").to_pylist()]

    def plain():
        spark.read.parquet(*locations).write.format("noop").mode("overwrite").save()

    def delta():
        dxs.read(spark, str(root)).write.format("noop").mode("overwrite").save()

    def metadata_columns():  # what any per-file DV filter must read besides the data
        from pyspark.sql import functions as F  # noqa: TID251 - benchmark of the Spark layer

        df = spark.read.parquet(*locations)
        df.select("*", F.col("_metadata.row_index"), F.col("_metadata.file_size")).write.format("noop").mode("overwrite").save()

    t0 = time.perf_counter()
    dxs.read(spark, str(root))
    plan_s = time.perf_counter() - t0
    plain(), delta(), metadata_columns()  # warm up
    t_plain, t_delta, t_meta = _best(plain, 5), _best(delta, 5), _best(metadata_columns, 5)
    kept = dxs.read(spark, str(root)).count()
    return {
        "rows": rows,
        "rows_after_dvs": kept,
        "files": files.num_rows,
        "files_with_dv": with_dv,
        "bytes": int(sum(files.column("size").to_pylist())),
        "parquet_s": t_plain,
        "dx_read_s": t_delta,
        "metadata_columns_s": t_meta,
        "plan_s": plan_s,
        "ratio": t_delta / t_plain,
    }


def bench_optimize(spark, megabytes: int) -> dict:
    root = TABLES / "spark_optimize"
    shutil.rmtree(root, ignore_errors=True)
    rows_per_mb = 36_000  # about 1 MB of parquet per 36k rows of this data
    rows = megabytes * rows_per_mb
    files = max(8, megabytes // 8)  # ~8 MB files
    t = time.perf_counter()
    dxs.write(spark, _data(spark, rows, files), str(root), target_file_size=16 << 20)
    gen = time.perf_counter() - t
    snap = dx.open_table(str(root)).snapshot()
    size = int(sum(snap.add_actions().column("size").to_pylist()))
    load_before = os.getloadavg()[0]
    t = time.perf_counter()
    m = dxs.optimize(spark, str(root), target_size=256 << 20)
    seconds = time.perf_counter() - t
    load_after = os.getloadavg()[0]
    after = dx.open_table(str(root)).snapshot()
    assert after.to_arrow(columns=["id"]).num_rows == rows  # sanity, not a timing assertion
    return {
        "input_mb": size / 1e6,
        "files_before": snap.add_actions().num_rows,
        "files_after": after.add_actions().num_rows,
        "seconds": seconds,
        "mb_per_s": size / 1e6 / seconds,
        "generate_s": gen,
        "files_removed": m.column("num_files_removed")[0].as_py(),
        "load_1min": [round(load_before, 2), round(load_after, 2)],
    }


def _median_interleaved(fns: dict, repeat: int = 3) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def _dv_table(spark, root: Path, rows: int, files: int) -> None:
    shutil.rmtree(root, ignore_errors=True)
    conf = {"delta.enableDeletionVectors": "true"}
    dxs.write(spark, _data(spark, rows, files), str(root), configuration=conf, target_file_size=1 << 40)
    dxs.delete(spark, str(root), "y < 100")  # ~10% of the rows of every file, as DVs written by the executors


def _merge_inputs(rows: int, source_rows: int):
    """A target of `rows` rows (ids 0..rows-1) and a source: half the ids updated, half new."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(3)

    def frame(ids):
        return pa.table({"id": ids, "x": rng.random(len(ids)), "y": rng.integers(0, 1000, len(ids)).astype(np.int32)})

    target = frame(np.arange(rows, dtype=np.int64))
    half = source_rows // 2
    ids = np.concatenate([rng.choice(rows, half, replace=False), np.arange(rows, rows + source_rows - half)]).astype(np.int64)
    return target, frame(ids)


def bench_merge(spark, rows: int, source_rows: int) -> dict:
    """MERGE (update all matched, insert the rest) on copies of one table: local, Spark, delta-rs."""
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    from deltaexplore.core.operations import merge, when_matched_update_all, when_not_matched_insert_all, write_table

    target, source = _merge_inputs(rows, source_rows)
    out: dict = {"target_rows": rows, "source_rows": source_rows}
    for dvs in (False, True):
        base = TABLES / f"merge_base_{'dv' if dvs else 'rewrite'}"
        shutil.rmtree(base, ignore_errors=True)
        conf = {"delta.enableDeletionVectors": str(dvs).lower()}
        write_table(str(base), target, configuration=conf, max_rows_per_file=rows // 40)
        source_path = TABLES / "merge_source.parquet"
        pq.write_table(source, source_path)
        clauses = [when_matched_update_all(), when_not_matched_insert_all()]
        copies = {}
        for engine in ("local", "spark", "delta-rs"):
            copies[engine] = TABLES / f"merge_{engine}_{dvs}"
            shutil.rmtree(copies[engine], ignore_errors=True)
            shutil.copytree(base, copies[engine])
        key = "dv" if dvs else "rewrite"
        t = time.perf_counter()
        m = merge(str(copies["local"]), source, ["id"], clauses)
        out[f"local_{key}_s"] = time.perf_counter() - t
        src_df = spark.read.parquet(f"file://{source_path}")
        t = time.perf_counter()
        ms = dxs.merge(spark, str(copies["spark"]), src_df, ["id"], clauses)
        out[f"spark_{key}_s"] = time.perf_counter() - t
        for metrics in (m, ms):  # the same work was done (a sanity check of the benchmark)
            row = metrics.to_pylist()[0]
            assert row["num_target_rows_updated"] == source_rows // 2
            assert row["num_target_rows_inserted"] == source_rows - source_rows // 2
        if not dvs:  # delta-rs writes no deletion vectors: compared on the rewrite case
            t = time.perf_counter()
            (
                DeltaTable(str(copies["delta-rs"]))
                .merge(source, predicate="source.id = target.id", source_alias="source", target_alias="target")
                .when_matched_update_all()
                .when_not_matched_insert_all()
                .execute()
            )
            out["deltars_rewrite_s"] = time.perf_counter() - t
    return out


def _plan_times(spark, uri: str, repeat: int = 3) -> dict:
    """`dx.spark.read(spark, uri)` as a user calls it — the table opened from its path, the log
    replayed, the plan built — until the DataFrame is returned, no action: median wall seconds,
    median CPU seconds of the driver (its Python and its JVM; less sensitive to the machine's
    load than wall time) and the Spark jobs started meanwhile (a scan's file listing would be one).
    The first call (imports, JIT warm-up) is not counted."""
    try:  # the driver JVM's CPU seconds from /proc (Linux); NaN elsewhere
        stat = Path(f"/proc/{spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getPid()}/stat")
        ticks = os.sysconf("SC_CLK_TCK")

        def jvm_cpu() -> float:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime

        jvm_cpu()
    except Exception:  # noqa: BLE001 - a benchmark figure, not needed

        def jvm_cpu() -> float:
            return float("nan")

    tracker = spark.sparkContext.statusTracker()
    dxs.read(spark, uri)
    walls, cpus, jobs = [], [], 0
    for _ in range(repeat):
        before = set(tracker.getJobIdsForGroup(None))
        cpu, jvm_before = time.process_time(), jvm_cpu()
        t = time.perf_counter()
        dxs.read(spark, uri)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - cpu + jvm_cpu() - jvm_before)
        jobs += len(set(tracker.getJobIdsForGroup(None)) - before)
    return {"wall_s": statistics.median(walls), "cpu_s": statistics.median(cpus), "jobs": jobs}


def _standalone_session(master_url: str):
    from pyspark.sql import SparkSession  # noqa: TID251 - benchmark of the Spark layer

    return (
        SparkSession.builder.master(master_url)
        .appName("deltaexplore-bench")
        .config("spark.executor.memory", "3g")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )


def bench_plan(plan_files: int) -> dict:
    """Only the planning figures of `bench_cluster`, on a standalone cluster of their own."""
    sys.path.insert(0, str(HERE.parent / "tests" / "spark"))
    from servers import start_standalone

    work = TABLES / "cluster"
    shutil.rmtree(work, ignore_errors=True)
    master, worker = start_standalone(work, cores=2, memory="4g")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    try:
        spark = _standalone_session(master.url)
        many = TABLES / "cluster_plan"
        _dv_table(spark, many, plan_files * 1000, plan_files)
        load_before = os.getloadavg()[0]
        plan = _plan_times(spark, str(many), repeat=5)
        out = {
            "plan_repeat": 5,
            "plan_files": plan_files,
            "plan_s": plan["wall_s"],
            "plan_cpu_s": plan["cpu_s"],
            "plan_jobs": plan["jobs"],
            "plan_load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        }
        spark.stop()
        return out
    finally:
        worker.stop()
        master.stop()


def bench_cluster(rows: int, files: int, plan_files: int, merge_rows: int, merge_source: int) -> dict:
    """The cluster part (see the module docstring), in a process of its own."""
    sys.path.insert(0, str(HERE.parent / "tests" / "spark"))
    from servers import start_standalone

    work = TABLES / "cluster"
    shutil.rmtree(work, ignore_errors=True)
    master, worker = start_standalone(work, cores=2, memory="4g")
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the worker is this machine: executors run this venv's Python
    try:
        spark = _standalone_session(master.url)
        root = TABLES / "cluster_dv"
        _dv_table(spark, root, rows, files)
        snap = dx.open_table(str(root)).snapshot()
        adds = snap.add_actions()
        locations = [f"file://{root}/{p}" for p in adds.column("path").to_pylist()]

        def plain():
            spark.read.parquet(*locations).write.format("noop").mode("overwrite").save()

        def delta():
            dxs.read(spark, str(root)).write.format("noop").mode("overwrite").save()

        plain(), delta()  # warm up
        read = _median_interleaved({"parquet": plain, "dx": delta})
        many = TABLES / "cluster_plan"
        _dv_table(spark, many, plan_files * 1000, plan_files)
        plan = _plan_times(spark, str(many))
        merged = bench_merge(spark, merge_rows, merge_source)
        out = {
            "rows": rows,
            "files": adds.num_rows,
            "files_with_dv": int(sum(1 for d in adds.column("deletionVector").to_pylist() if d)),
            "rows_after_dvs": dxs.read(spark, str(root)).count(),
            "parquet_s": read["parquet"],
            "dx_read_s": read["dx"],
            "ratio": read["dx"] / read["parquet"],
            "plan_files": plan_files,
            "plan_s": plan["wall_s"],
            "plan_cpu_s": plan["cpu_s"],
            "plan_jobs": plan["jobs"],
            "merge": merged,
            "spark_version": spark.version,
            "load_1min": round(os.getloadavg()[0], 2),
        }
        spark.stop()
        return out
    finally:
        worker.stop()
        master.stop()


def _plan_load(cluster: dict) -> str:
    if "plan_load_1min" not in cluster:
        return ""
    before, after = cluster["plan_load_1min"]
    return (
        f" Measured in a run of its own (`--only plan`): 1-minute load average {before} before, {after} after (2 cores, shared)."
    )


def render(spark_version: str, read: dict | None, opt: dict | None, cluster: dict | None = None) -> str:
    text = f"""# Spark benchmark

Machine: 2 cores, `local[2]`, PySpark {spark_version}. Reported, never asserted.
"""
    if read:
        text += f"""
## `dx.spark.read` of a table with deletion vectors vs `spark.read.parquet` of the same files

{read["rows"]:,} rows in {read["files"]} files ({read["bytes"] / 1e6:.0f} MB), {read["files_with_dv"]} with a DV
({read["rows"] - read["rows_after_dvs"]:,} rows deleted). `noop` sink, best of 5.

| read | seconds |
|---|---|
| `spark.read.parquet` (all rows, no DVs) | {read["parquet_s"]:.2f} |
| `dx.spark.read` (DVs applied) | {read["dx_read_s"]:.2f} |
| ratio (target ≤ 1.2) | {read["ratio"]:.2f}x |
"""
        if "metadata_columns_s" in read:
            text += f"""
For scale: `spark.read.parquet` of the same files also selecting `_metadata.row_index` and
`_metadata.file_size` (what a per-file DV filter has to read) takes {read["metadata_columns_s"]:.2f} s
({read["metadata_columns_s"] / read["parquet_s"]:.2f}x); building the `dx.spark.read` plan on the driver (log replay,
DV decoding, bitmap literals) takes {read["plan_s"]:.2f} s of each read. DVs are applied as one bitmap per
file tested on `_metadata.row_index`; the file is recognised by its size (no per-row path string).
"""
    if opt:
        text += f"""
## OPTIMIZE throughput

{opt["input_mb"]:.0f} MB in {opt["files_before"]} files → {opt["files_after"]} files (target 256 MB):
{opt["seconds"]:.1f} s, **{opt["mb_per_s"]:.1f} MB/s** of input (generating the table took {opt["generate_s"]:.1f} s).
"""
        if "load_1min" in opt:
            before, after = opt["load_1min"]
            text += f"""
Files are written by Spark's parquet writer (one task per bin, no shuffle; zstd level 1). The
machine is shared: 1-minute load average {before:.1f} before and {after:.1f} after the run (2 cores).
"""
    if cluster:
        m = cluster["merge"]
        text += f"""
## On a standalone cluster (a master and one 2-core worker on loopback)

`dx.spark.read` of {cluster["rows"]:,} rows in {cluster["files"]} files, {cluster["files_with_dv"]} with a DV
({cluster["rows"] - cluster["rows_after_dvs"]:,} rows deleted; the DVs written by the executors), `noop` sink,
median of 3 interleaved runs: `spark.read.parquet` {cluster["parquet_s"]:.2f} s, `dx.spark.read`
{cluster["dx_read_s"]:.2f} s: **{cluster["ratio"]:.2f}x** (target ≤ 1.15x). Each run times the whole read as a user
runs it (both sides plan their scan inside the timing).

Planning a read of {cluster["plan_files"]:,} files with DVs as the user meets it — `dx.spark.read(spark, path)`
called until the DataFrame is returned, no action (opening the table, replaying its log, building the
plan): {cluster["plan_s"]:.2f} s wall, median of {cluster.get("plan_repeat", 3)} (target ≤ 0.5 s);
{cluster.get("plan_cpu_s", float("nan")):.2f} s of driver CPU (its Python and its JVM); Spark jobs started while
planning: {cluster.get("plan_jobs", "not measured")}.{_plan_load(cluster)}

MERGE of {m["source_rows"]:,} source rows (half updates, half inserts) into {m["target_rows"]:,} target rows
(40 files), update all / insert all, each engine on its own copy of the same table:

| engine | files rewritten | deletion vectors |
|---|---|---|
| deltaexplore, local (Arrow + polars) | {m["local_rewrite_s"]:.1f} s | {m["local_dv_s"]:.1f} s |
| deltaexplore on Spark (this cluster) | {m["spark_rewrite_s"]:.1f} s | {m["spark_dv_s"]:.1f} s |
| delta-rs `merge` | {m["deltars_rewrite_s"]:.1f} s | (writes no DVs) |

1-minute load average at the end: {cluster["load_1min"]} (2 cores, shared).
"""
    return text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--read-rows", type=int, default=20_000_000)
    ap.add_argument("--optimize-mb", type=int, default=1024)
    parts = ["read", "optimize", "cluster", "plan"]
    ap.add_argument("--only", choices=parts, help="run one part; the others keep their last result")
    ap.add_argument("--cluster-rows", type=int, default=10_000_000)
    ap.add_argument("--cluster-files", type=int, default=300)
    ap.add_argument("--plan-files", type=int, default=2000)
    ap.add_argument("--merge-rows", type=int, default=10_000_000)
    ap.add_argument("--merge-source", type=int, default=1_000_000)
    args = ap.parse_args()
    TABLES.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    saved = RESULTS / "spark.json"
    results = json.loads(saved.read_text()) if saved.exists() else {}
    if args.only in ("plan", "cluster"):
        if args.only == "plan":
            results.setdefault("cluster", {}).update(bench_plan(args.plan_files))
        else:
            sizes = (args.cluster_rows, args.cluster_files, args.plan_files, args.merge_rows, args.merge_source)
            results["cluster"] = bench_cluster(*sizes)
        print(args.only, results["cluster"], flush=True)
        saved.write_text(json.dumps(results, indent=1))
        text = render(results["cluster"]["spark_version"], results.get("read"), results.get("optimize"), results.get("cluster"))
        (RESULTS / "spark.md").write_text(text)
        print(text)
        return
    spark = dxs.get_spark(master="local[2]", config={"spark.sql.shuffle.partitions": "4", "spark.driver.memory": "6g"})
    if args.only in (None, "read"):
        results["read"] = bench_read(spark, args.read_rows)
        print("read", results["read"], flush=True)
    if args.only in (None, "optimize"):
        results["optimize"] = bench_optimize(spark, args.optimize_mb)
        print("optimize", results["optimize"], flush=True)
    saved.write_text(json.dumps(results, indent=1))
    text = render(spark.version, results.get("read"), results.get("optimize"), results.get("cluster"))
    (RESULTS / "spark.md").write_text(text)
    print(text)
    spark.stop()


if __name__ == "__main__":
    main()
