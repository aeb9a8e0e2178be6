"""A loopback proxy in front of an S3 endpoint that answers every request after a fixed latency.

The object-store benchmark measures how a reader copes with a store's round trip. moto's server
(werkzeug, a thread per connection) spends milliseconds of CPU on each request on this 2-core
machine, the CPU the readers need: behind it, an open of 1,000 commits measured moto more than
the latency. This proxy runs in its own process on asyncio: every request waits `--latency-ms`
(a timer, no thread), and a repeated GET or HEAD (same path, query and range: objects and
listings never change during a benchmark run) is answered from memory; the first one is
forwarded to the endpoint behind it. `GET /_faults/requests` answers the requests seen since the
last such GET, by kind (LIST, GET, HEAD, ...), like `tests/s3_server.py`.

Usage: ``python benchmarks/latency_proxy.py --upstream http://127.0.0.1:PORT --latency-ms 20``
(prints its endpoint on the first line). Writes go to the upstream directly, not through here.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import threading
from urllib.parse import urlsplit

COUNT_PATH = "/_faults/requests"
_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length"}
#: status, reason, headers, body
Answer = tuple[int, str, list[tuple[str, str]], bytes]


class Proxy:
    def __init__(self, upstream: str, latency_s: float) -> None:
        parts = urlsplit(upstream)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.latency_s = latency_s
        self.cache: dict[tuple[str, str, str], Answer] = {}
        self.counts: dict[str, int] = {}
        self._local = threading.local()

    def _forward(self, method: str, target: str, headers: list[tuple[str, str]], body: bytes) -> Answer:
        """The upstream's answer (blocking: run on a worker thread, only for what is not cached)."""
        for attempt in (0, 1):
            conn = getattr(self._local, "conn", None)
            if conn is None:
                conn = self._local.conn = http.client.HTTPConnection(self.host, self.port, timeout=120)
            try:
                conn.request(method, target, body=body or None, headers=dict(headers))
                r = conn.getresponse()
                data = r.read()
                return r.status, r.reason, r.getheaders(), data
            except (http.client.HTTPException, OSError):
                conn.close()
                self._local.conn = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = lines[0].split(" ", 2)
                headers = [(k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in lines[1:] if line)]
                lower = {k.lower(): v for k, v in headers}
                body = await reader.readexactly(int(lower.get("content-length", "0")))
                path, _, query = target.partition("?")
                if path == COUNT_PATH:
                    data = json.dumps({"total": sum(self.counts.values()), **self.counts}).encode()
                    self.counts = {}
                    answer = (200, "OK", [("Content-Type", "application/json")], data)
                else:
                    kind = "LIST" if method == "GET" and ("list-type" in query or "prefix=" in query) else method
                    self.counts[kind] = self.counts.get(kind, 0) + 1
                    key = (method, target, lower.get("range", ""))
                    waited = asyncio.ensure_future(asyncio.sleep(self.latency_s))
                    cached = self.cache.get(key) if method in ("GET", "HEAD") else None
                    if cached is None:
                        cached = await loop.run_in_executor(None, self._forward, method, target, headers, body)
                        if method in ("GET", "HEAD") and 200 <= cached[0] < 300:
                            self.cache[key] = cached
                    await waited
                    answer = cached
                status, reason, out_headers, data = answer
                kept = [(k, v) for k, v in out_headers if k.lower() not in _HOP]
                length = str(len(data))
                if method == "HEAD":  # the object's size, no body
                    length = dict((k.lower(), v) for k, v in out_headers).get("content-length")
                lines_out = [f"HTTP/1.1 {status} {reason}", *(f"{k}: {v}" for k, v in kept)]
                if length is not None:
                    lines_out.append(f"Content-Length: {length}")
                writer.write(("\r\n".join(lines_out) + "\r\n\r\n").encode("latin-1"))
                if method != "HEAD":
                    writer.write(data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


async def serve(upstream: str, latency_ms: float) -> None:
    proxy = Proxy(upstream, latency_ms / 1000)
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0, backlog=512)
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
