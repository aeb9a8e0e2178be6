"""A loopback proxy in front of an S3 endpoint that answers every request after a fixed latency.

The object-store benchmark measures how a reader copes with a store's round trip. moto's server
(werkzeug, a thread per connection) spends milliseconds of CPU on each request on this 2-core
machine, the CPU the readers need: behind it, an open of 1,000 commits measured moto more than
the latency. This proxy runs in its own process on one asyncio loop and costs as little CPU per
request as it can, so that it measures the clients, not itself: every connection is served as
its requests arrive (no thread, no lock, no queue between connections), every request is
answered `--latency-ms` after it arrived (a timer of the loop; many requests wait at once, the
latency is per request, not per byte), and a repeated GET or HEAD (same path, query and range;
objects and listings never change during a benchmark run) is answered from memory with the
bytes built when it was first forwarded (status 2xx or 404). Only a first request goes to the
endpoint behind, on a worker thread. Sockets have TCP_NODELAY (an answer leaves in one write).
`GET /_faults/requests` answers the requests seen since the last such GET, by kind (LIST, GET,
HEAD, ...), like `tests/s3_server.py`, and the most connections and requests open at once.

An earlier version on asyncio streams spent ~95 µs of CPU per cached request (~140 µs per
delta-rs request) on one core; a loaded machine turned that into a queue in front of both
clients, worst for the one that sends more requests.

Usage: ``python benchmarks/latency_proxy.py --upstream http://127.0.0.1:PORT --latency-ms 20``
(prints its endpoint on the first line). Writes go to the upstream directly, not through here.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from urllib.parse import urlsplit

COUNT_PATH = "/_faults/requests"
_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}
#: forwards to the endpoint at once (first reads only: the warm-up open)
FORWARD_THREADS = 32


class Proxy:
    """What all connections share: the endpoint behind, the cache of answers and the counts."""

    def __init__(self, upstream: str, latency_s: float) -> None:
        parts = urlsplit(upstream)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.latency_s = latency_s
        #: (method, target, range) -> the whole answer, as sent
        self.cache: dict[tuple[str, str, str], bytes] = {}
        self.counts: dict[str, int] = {}
        self.open_connections = self.max_connections = 0
        self.in_flight = self.max_in_flight = 0
        self.pool = ThreadPoolExecutor(FORWARD_THREADS, thread_name_prefix="forward")
        self._local = threading.local()

    def count_answer(self) -> bytes:
        data = json.dumps(
            {
                "total": sum(self.counts.values()),
                **self.counts,
                "max_connections": self.max_connections,
                "max_in_flight": self.max_in_flight,
            }
        ).encode()
        self.counts = {}
        self.max_connections, self.max_in_flight = self.open_connections, self.in_flight
        return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(data), data)

    def forward(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes) -> bytes:
        """The upstream's answer, as this proxy sends it (blocking: on a worker thread)."""
        for attempt in (0, 1):
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._local.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
            try:
                conn.request(method, target, body=body or None, headers=dict(headers))
                r = conn.getresponse()
                data = r.read()
                break
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        kept = [(k, v) for k, v in r.getheaders() if k.lower() not in _HOP]
        length: str | None = str(len(data))
        if method == "HEAD":  # the object's size, no body
            length, data = r.getheader("content-length"), b""
        lines = [f"HTTP/1.1 {r.status} {r.reason}", *(f"{k}: {v}" for k, v in kept)]
        if length is not None:
            lines.append(f"Content-Length: {length}")
        answer = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + data
        if method in ("GET", "HEAD") and (200 <= r.status < 300 or r.status == 404):
            self.cache[(method, target, _header(headers, "range"))] = answer
        return answer


class Connection(asyncio.Protocol):
    """One client connection: its requests one after the other (HTTP/1.1 without pipelining;
    a pipelined request waits in the buffer until the one before is answered)."""

    def __init__(self, proxy: Proxy) -> None:
        self.proxy = proxy
        self.loop = asyncio.get_running_loop()
        self.buffer = b""
        self.busy = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        sock = transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        p = self.proxy
        p.open_connections += 1
        p.max_connections = max(p.max_connections, p.open_connections)

    def connection_lost(self, exc: Exception | None) -> None:
        self.proxy.open_connections -= 1
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self.next_request()

    def next_request(self) -> None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            return
        lines = self.buffer[:end].decode("latin-1").split("\r\n")
        headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:] if line)]
        size = int(_header(headers, "content-length") or 0)
        if len(self.buffer) < end + 4 + size:
            return
        body, self.buffer = self.buffer[end + 4 : end + 4 + size], self.buffer[end + 4 + size :]
        method, target, _ = lines[0].split(" ", 2)
        p = self.proxy
        self.busy = True
        p.in_flight += 1
        p.max_in_flight = max(p.max_in_flight, p.in_flight)
        if target == COUNT_PATH:
            self.answer(p.count_answer())
            return
        query = target.partition("?")[2]
        kind = "LIST" if method == "GET" and ("list-type" in query or "prefix=" in query) else method
        p.counts[kind] = p.counts.get(kind, 0) + 1
        cached = p.cache.get((method, target, _header(headers, "range"))) if method in ("GET", "HEAD") else None
        if cached is not None:
            self.loop.call_later(p.latency_s, self.answer, cached)
            return
        due = self.loop.time() + p.latency_s
        forwarded = self.loop.run_in_executor(p.pool, p.forward, method, target, headers, body)
        forwarded.add_done_callback(lambda f: self.loop.call_at(due, self.answer_forwarded, f))

    def answer_forwarded(self, forwarded: asyncio.Future[bytes]) -> None:
        if forwarded.exception() is not None:
            self.answer(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
        else:
            self.answer(forwarded.result())

    def answer(self, data: bytes) -> None:
        self.proxy.in_flight -= 1
        self.busy = False
        if self.transport is None:
            return
        self.transport.write(data)
        if self.buffer:
            self.next_request()


def _header(headers: list[tuple[str, str]], name: str) -> str:
    return next((v for k, v in headers if k.lower() == name), "")


async def serve(upstream: str, latency_ms: float) -> None:
    proxy = Proxy(upstream, latency_ms / 1000)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Connection(proxy), "127.0.0.1", 0, backlog=1024)
    host, port = server.sockets[0].getsockname()[:2]
    print(f"http://{host}:{port}", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--upstream", required=True)
    ap.add_argument("--latency-ms", type=float, default=20.0)
    args = ap.parse_args()
    asyncio.run(serve(args.upstream, args.latency_ms))


if __name__ == "__main__":
    main()
