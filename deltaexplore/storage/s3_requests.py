"""Reads and listings of S3 objects in plain signed HTTP requests: what opening a table needs.

Opening a table on S3 lists `_delta_log/` and reads its small files: hundreds of requests
whose cost is the round trip. s3fs spends ~4 ms of CPU per request and 1.2 s importing itself
and aiobotocore; pyarrow's `S3FileSystem` asks for an object's size (HEAD) before every read
and cannot list from a key on. This client sends one request per read (GET, with a range when
asked) and per listing page (ListObjectsV2 with `start-after`, so `list_dir` can list ranges
of names at once), signed with AWS Signature V4, on one kept-alive connection per thread.
Many reads at once (`get_many`: a log's commits) go out from one thread on asyncio, each on
a kept-alive connection of a pool as large as the bound: hundreds in flight cost neither a
thread each nor `http.client`'s header parsing (~0.5 ms of CPU per request in threads).
Writes stay on s3fs (conditional PUT).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import hmac
import http.client
import ssl
import threading
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote_plus, urlsplit

__all__ = ["S3Client", "S3Object", "s3_client_for"]

_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
#: s3fs options this client understands (any other option keeps reads on s3fs)
_OPTIONS = frozenset({"key", "secret", "token", "anon", "client_kwargs", "config_kwargs"})
#: what `S3Client.get_many` hands back: per key its bytes or the exception its read ended with
Reads = list[bytes | Exception]
#: seconds to wait for a connection or an answer before the request counts as failed (retried)
TIMEOUT_S = 60.0
#: `get_many` opens this many connections at once, the next ones once these have connected
CONNECT_RAMP = 32
#: ... or once this many seconds have passed (a store far away takes a round trip to connect)
CONNECT_RAMP_WAIT_S = 0.005


@dataclass(frozen=True, slots=True)
class S3Object:
    """One listed object: its key, size in bytes and modification time in ms since the epoch."""

    key: str
    size: int
    modification_time: int


class S3Error(OSError):
    """An S3 error answer: `S3 <status> <Code>: <Message>` (the retry policy reads the status)."""


def s3_client_for(options: dict[str, Any]) -> S3Client | None:
    """A client for s3fs-style `options` when they translate to it exactly: static credentials
    (`key`/`secret`/`token`) or `anon`, and an `endpoint_url` or `region_name` in
    `client_kwargs` (s3fs finds a bucket's region itself; this client does not). Else None."""
    client = options.get("client_kwargs") or {}
    config = options.get("config_kwargs") or {}
    if not isinstance(client, dict) or not isinstance(config, dict) or set(options) - _OPTIONS:
        return None
    client = dict(client)
    endpoint, region = client.pop("endpoint_url", None), client.pop("region_name", None)
    if client or set(config) - {"max_pool_connections"} or not (endpoint or region):
        return None
    anon = bool(options.get("anon"))
    key, secret, token = options.get("key"), options.get("secret"), options.get("token")
    if not anon and not (isinstance(key, str) and isinstance(secret, str) and key and secret):
        return None
    if token is not None and not isinstance(token, str):
        return None
    if endpoint:
        parts = urlsplit(str(endpoint))
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/"):
            return None
    return S3Client(
        endpoint=str(endpoint).rstrip("/") if endpoint else None,
        region=str(region or "us-east-1"),
        credentials=None if anon else (str(key), str(secret), token),
    )


class S3Client:
    """Signed GET, HEAD and ListObjectsV2 requests to one S3 endpoint (path-style addressing
    on a custom endpoint, virtual-hosted on AWS)."""

    def __init__(self, *, endpoint: str | None, region: str, credentials: tuple[str, str, str | None] | None) -> None:
        self.endpoint = endpoint
        self.region = region
        self._credentials = credentials
        self._local = threading.local()
        self._signing_keys: dict[str, bytes] = {}

    def __repr__(self) -> str:
        return f"S3Client({self.endpoint or self.region!r})"

    # -- requests ------------------------------------------------------------------------
    def get(self, bucket: str, key: str, start: int | None = None, end: int | None = None) -> bytes:
        """The object's bytes (`start`..`end`, end exclusive, when given).

        Raises:
            FileNotFoundError: no such object.
            S3Error / ConnectionError / TimeoutError: any other failure.
        """
        headers = {}
        if start is not None or end is not None:
            if end is not None and end <= (start or 0):
                return b""
            headers["range"] = f"bytes={start or 0}-{'' if end is None else end - 1}"
        status, _, body = self._request("GET", bucket, key, {}, headers)
        if status == 416:  # a range starting past the end
            return b""
        return body

    def get_many(self, bucket: str, keys: Sequence[str], max_in_flight: int) -> Reads:
        """The bytes of each object of `bucket` at `keys`, in order, or the exception its read
        ended with (as `get` raises it; a failed request is not repeated here: the caller's
        retry policy decides). At most `max_in_flight` requests at once, from one thread (its
        own event loop, so a caller inside a running loop, as a notebook kernel, is served too)."""
        if not keys:
            return []
        box: list[Reads] = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                box.append(asyncio.run(self._get_all(bucket, keys, max(1, max_in_flight))))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting caller
                failure.append(exc)

        thread = threading.Thread(target=run, name="deltaexplore-io", daemon=True)
        thread.start()
        thread.join()
        if failure:
            raise failure[0]
        return box[0]

    def head(self, bucket: str, key: str) -> S3Object | None:
        """Size and time of the object, or None when it does not exist."""
        try:
            _, headers, _ = self._request("HEAD", bucket, key, {}, {})
        except FileNotFoundError:
            return None
        modified = headers.get("last-modified")
        ms = 0
        if modified:
            try:
                ms = int(dt.datetime.strptime(modified, "%a, %d %b %Y %H:%M:%S %Z").replace(tzinfo=dt.UTC).timestamp() * 1000)
            except ValueError:
                ms = 0
        return S3Object(key, int(headers.get("content-length") or 0), ms)

    def list_page(
        self, bucket: str, prefix: str, *, start_after: str | None = None, token: str | None = None, delimiter: str = "/"
    ) -> tuple[list[S3Object], str | None]:
        """One page of ListObjectsV2: the objects (common prefixes left out) and the token of the
        next page (None on the last one)."""
        query = {"list-type": "2", "prefix": prefix, "encoding-type": "url"}
        if delimiter:
            query["delimiter"] = delimiter
        if start_after:
            query["start-after"] = start_after
        if token:
            query["continuation-token"] = token
        _, _, body = self._request("GET", bucket, "", query, {})
        root = ET.fromstring(body)
        objects = []
        for item in root.iter(f"{_NS}Contents"):
            key = _unquote(item.findtext(f"{_NS}Key") or "")
            modified = item.findtext(f"{_NS}LastModified") or ""
            try:
                ms = int(dt.datetime.fromisoformat(modified.replace("Z", "+00:00")).timestamp() * 1000)
            except ValueError:
                ms = 0
            objects.append(S3Object(key, int(item.findtext(f"{_NS}Size") or 0), ms))
        truncated = (root.findtext(f"{_NS}IsTruncated") or "").lower() == "true"
        next_token = root.findtext(f"{_NS}NextContinuationToken") if truncated else None
        return objects, next_token or None

    def list(self, bucket: str, prefix: str, *, start_after: str | None = None, stop_after: str | None = None) -> list[S3Object]:
        """Every object directly under `prefix` with a key after `start_after` and (when given)
        at most `stop_after`, in key order: pages one after the other, stopping at the first
        page that passes `stop_after`."""
        out: list[S3Object] = []
        token: str | None = None
        while True:
            page, token = self.list_page(bucket, prefix, start_after=start_after, token=token)
            out.extend(o for o in page if stop_after is None or o.key <= stop_after)
            if token is None or (stop_after is not None and page and page[-1].key > stop_after):
                return out

    # -- plumbing --------------------------------------------------------------------------
    def _target(self, bucket: str, key: str) -> tuple[str, str, int | None, str]:
        """(scheme, host, port, path) of an object, URI-encoded as signed."""
        encoded = quote(key, safe="/-_.~")
        if self.endpoint is None:
            if "." not in bucket:
                return "https", f"{bucket}.s3.{self.region}.amazonaws.com", None, f"/{encoded}"
            return "https", f"s3.{self.region}.amazonaws.com", None, f"/{bucket}/{encoded}"
        parts = urlsplit(self.endpoint)
        return parts.scheme, parts.hostname or "", parts.port, f"/{bucket}/{encoded}"

    def _connection(self, scheme: str, host: str, port: int | None) -> http.client.HTTPConnection:
        conns: dict[tuple[str, str, int | None], http.client.HTTPConnection] = self._local.__dict__.setdefault("conns", {})
        conn = conns.get((scheme, host, port))
        if conn is None:
            cls = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
            conn = conns[(scheme, host, port)] = cls(host, port, timeout=TIMEOUT_S)
        return conn

    def _prepare(
        self, method: str, bucket: str, key: str, query: dict[str, str], headers: dict[str, str]
    ) -> tuple[str, str, int | None, str, dict[str, str]]:
        """(scheme, host, port, request target, signed headers) of a request."""
        scheme, host, port, path = self._target(bucket, key)
        host_header = host if port is None else f"{host}:{port}"
        canonical_query = "&".join(f"{quote(k, safe='-_.~')}={quote(v, safe='-_.~')}" for k, v in sorted(query.items()))
        headers = {**headers, "host": host_header}
        if self._credentials is not None:
            headers.update(self._sign(method, path, canonical_query, headers))
        return scheme, host, port, path + (f"?{canonical_query}" if canonical_query else ""), headers

    def _request(
        self, method: str, bucket: str, key: str, query: dict[str, str], headers: dict[str, str]
    ) -> tuple[int, dict[str, str], bytes]:
        scheme, host, port, target, headers = self._prepare(method, bucket, key, query, headers)
        host_header = headers["host"]
        for attempt in (0, 1):  # a kept-alive connection the server closed meanwhile: once more on a new one
            conn = self._connection(scheme, host, port)
            try:
                conn.request(method, target, headers=headers)
                response = conn.getresponse()
                body = response.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
                conn.close()
                if attempt:
                    raise ConnectionError(f"S3 connection to {host_header} lost: {exc}") from exc
            except (OSError, http.client.HTTPException) as exc:
                conn.close()
                if isinstance(exc, TimeoutError):
                    raise
                raise ConnectionError(f"S3 request to {host_header} failed: {exc}") from exc
        answer = {k.lower(): v for k, v in response.getheaders()}
        _check(response.status, response.reason, body, method, bucket, key)
        return response.status, answer, body

    async def _get_all(self, bucket: str, keys: Sequence[str], max_in_flight: int) -> Reads:
        """`get_many` on the running loop: `max_in_flight` workers, each on its own kept-alive
        connection, taking the next key as each answer arrives. Workers start `CONNECT_RAMP` at
        a time, each batch once the one before has connected: the first requests leave after a
        few connects, and the next connections are made while those wait for their answers
        (256 connects at once held every request back by 0.1-0.2 s on a loaded machine)."""
        results: Reads = [b""] * len(keys)
        scheme, host, port, _ = self._target(bucket, "")
        context = ssl.create_default_context() if scheme == "https" else None
        port = port or (443 if scheme == "https" else 80)
        pending = iter(range(len(keys)))  # shared by the workers: one thread, no lock needed
        taken = [0]  # keys the workers took so far

        async def worker(connected: asyncio.Future[None]) -> None:
            stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None
            try:
                for i in pending:
                    taken[0] += 1
                    stream = await self._get_one(bucket, keys, i, results, stream, (host, port, context), connected)
            finally:
                _close(stream)
                if not connected.done():
                    connected.set_result(None)

        loop = asyncio.get_running_loop()
        workers: list[asyncio.Future[None]] = []
        batch: list[asyncio.Future[None]] = []
        for n in range(min(max_in_flight, len(keys))):
            if batch and n % CONNECT_RAMP == 0:
                await asyncio.wait(batch, timeout=CONNECT_RAMP_WAIT_S)  # the batch before has connected (or failed to)
                batch = []
                if taken[0] >= len(keys):
                    break
            batch.append(loop.create_future())
            workers.append(asyncio.ensure_future(worker(batch[-1])))
        await asyncio.gather(*workers)
        return results

    async def _get_one(
        self,
        bucket: str,
        keys: Sequence[str],
        i: int,
        results: Reads,
        stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None,
        address: tuple[str, int, ssl.SSLContext | None],
        connected: asyncio.Future[None],
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        """GET `keys[i]` on `stream` (a new connection when None or when the kept-alive one was
        closed meanwhile; `connected` is resolved once one is made), its bytes or error into
        `results[i]`: the connection to go on with."""
        host, port, context = address
        _, _, _, target, headers = self._prepare("GET", bucket, keys[i], {}, {})
        request = (f"GET {target} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n").encode("latin-1")
        for attempt in (0, 1):  # a kept-alive connection the server closed meanwhile: once more on a new one
            reused = stream is not None
            try:
                if stream is None:
                    try:
                        stream = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=context), TIMEOUT_S)
                    finally:
                        if not connected.done():
                            connected.set_result(None)
                status, reason, body, keep = await asyncio.wait_for(_exchange(*stream, request), TIMEOUT_S)
            except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as exc:
                _close(stream)
                stream = None
                if attempt == 0 and reused and not isinstance(exc, TimeoutError):
                    continue
                results[i] = exc if isinstance(exc, TimeoutError) else ConnectionError(f"S3 request to {host} failed: {exc}")
                return None
            if not keep:
                _close(stream)
                stream = None
            try:
                _check(status, reason, body, "GET", bucket, keys[i])
                results[i] = b"" if status == 416 else body
            except OSError as exc:
                results[i] = exc
            return stream
        return stream

    def _sign(
        self, method: str, path: str, canonical_query: str, headers: dict[str, str], now: dt.datetime | None = None
    ) -> dict[str, str]:
        """The AWS Signature V4 headers of a request with an empty body (signed at `now`)."""
        assert self._credentials is not None
        access, secret, token = self._credentials
        now = now or dt.datetime.now(dt.UTC)
        amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
        signed = {**{k.lower(): v.strip() for k, v in headers.items()}, "x-amz-date": amz_date}
        signed["x-amz-content-sha256"] = _EMPTY_SHA256
        if token:
            signed["x-amz-security-token"] = token
        names = sorted(signed)
        canonical = "\n".join(
            [method, path, canonical_query, "".join(f"{n}:{signed[n]}\n" for n in names), ";".join(names), _EMPTY_SHA256]
        )
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = f"AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
        key = self._signing_keys.get(day)
        if key is None:
            key = f"AWS4{secret}".encode()
            for part in (day, self.region, "s3", "aws4_request"):
                key = hmac.new(key, part.encode(), hashlib.sha256).digest()
            self._signing_keys = {day: key}
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        out = {k: v for k, v in signed.items() if k != "host"}
        out["authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={access}/{scope}, SignedHeaders={';'.join(names)}, Signature={signature}"
        )
        return out


def _check(status: int, reason: str, body: bytes, method: str, bucket: str, key: str) -> None:
    """Raise what an answer says went wrong: FileNotFoundError for 404, `S3Error` for any other
    status from 300 on (416, a range past the end, is an empty read)."""
    if status == 404:
        raise FileNotFoundError(f"no such object: s3://{bucket}/{key}")
    if status >= 300 and status != 416:
        code = message = ""
        if body:
            try:
                error = ET.fromstring(body)
                code, message = error.findtext("Code") or "", error.findtext("Message") or ""
            except ET.ParseError:
                message = body[:200].decode("utf-8", "replace")
        raise S3Error(f"S3 {status} {code or reason}: {message} ({method} s3://{bucket}/{key})")


async def _exchange(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes) -> tuple[int, str, bytes, bool]:
    """Send one HTTP/1.1 request, read its answer: (status, reason, body, whether the
    connection stays open). Bodies by Content-Length, chunked, or up to the connection's end."""
    writer.write(request)
    await writer.drain()
    head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    version, _, rest = head[0].partition(" ")
    code, _, reason = rest.partition(" ")
    status = int(code)
    headers: dict[str, str] = {}
    for line in head[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    keep = version == "HTTP/1.1" and headers.get("connection", "").lower() != "close"
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            if size == 0:
                while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                    pass
                break
            chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        body = b"".join(chunks)
    elif "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
    elif status in (204, 304) or status < 200:
        body = b""
    else:
        body, keep = await reader.read(), False
    return status, reason, body, keep


def _close(stream: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None) -> None:
    """Close a connection (if any)."""
    if stream is not None:
        stream[1].close()


def _unquote(key: str) -> str:
    """A key of a listing asked with `encoding-type=url`."""
    return unquote_plus(key)
