"""A network-shaping, fault-injecting HTTP/1.1 proxy in front of the test S3 server.

Loopback has no latency and no limit; an object store far away has both, throttles (503 SlowDown)
and drops connections. `ShapingProxy` listens on 127.0.0.1 (a free port), forwards each client
connection to the upstream server over a connection of its own, and on the way back:

- holds every response until `delay_s` has passed since its request arrived (time to first byte);
- paces each connection's responses to `rate_bytes_per_s` (a token bucket of `burst_bytes`);
- answers requests chosen by `throttle` / `unavailable` itself with `503 Slow Down` and S3's XML
  error body (the request never reaches the server), and cuts those chosen by `reset` with a TCP
  reset (SO_LINGER 0, then close) after `after_bytes` bytes of their response.

It reads requests (request line, headers, a `Content-Length` or chunked body) to know where each
one ends, and does not read responses: clients of S3 wait for a response before the next request
on the same connection (no pipelining). It runs an asyncio loop in a background thread; use it as
a context manager. Registered as a pytest plugin from tests/conftest.py: the fixture `shaped_s3`
is a proxy in front of the session's `s3_server` with storage options that go through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import socket
import struct
import threading
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit
from xml.sax.saxutils import escape

import pytest

from tests.s3_server import S3Server

Fault = Literal["slowdown", "reset"]
READ_BYTES = 256 * 1024
HEAD_LIMIT = 64 * 1024
_FLUSH_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Seen:
    """One request as the proxy saw it, and the fault it was given (None: forwarded untouched;
    a reset given to a response shorter than its `after_bytes` does not happen)."""

    method: str
    target: str
    fault: Fault | None


@dataclass
class _Rule:
    """A fault for requests whose target contains `path`: the next `count` ones (None: all)."""

    fault: Fault
    path: str
    count: int | None
    after_bytes: int = 0


@dataclass(frozen=True)
class _Request:
    method: str
    target: str
    headers: dict[str, str]

    @property
    def chunked(self) -> bool:
        return "chunked" in self.headers.get("transfer-encoding", "").lower()

    @property
    def length(self) -> int:
        return int(self.headers.get("content-length", "0"))

    @property
    def has_body(self) -> bool:
        return self.chunked or self.length > 0


def parse_head(head: bytes) -> _Request:
    """The request line and headers of `head` (up to and with its blank line)."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3:
        raise ValueError(f"not an HTTP/1.1 request line: {lines[0]!r}")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    return _Request(parts[0], parts[1], headers)


def slowdown_response(request: _Request, close: bool) -> bytes:
    """S3's `503 Slow Down` for `request`, with its XML error body (none for HEAD)."""
    path = escape(request.target.split("?", 1)[0])
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>SlowDown</Code>'
        f"<Message>Please reduce your request rate.</Message><Resource>{path}</Resource>"
        "<RequestId>shaping-proxy</RequestId></Error>"
    ).encode()
    head = (
        "HTTP/1.1 503 Slow Down\r\nContent-Type: application/xml\r\n"
        f"Content-Length: {len(body)}\r\nx-amz-request-id: shaping-proxy\r\n"
        f"Connection: {'close' if close else 'keep-alive'}\r\n\r\n"
    ).encode()
    return head if request.method == "HEAD" else head + body


async def copy_body(
    reader: asyncio.StreamReader, request: _Request, sink: Callable[[bytes], None]
) -> None:
    """Pass the body of `request` from `reader` to `sink` (which may drop it)."""
    if not request.chunked:
        await _copy_exactly(reader, request.length, sink)
        return
    while True:
        line = await reader.readuntil(b"\r\n")
        sink(line)
        size = int(line.split(b";", 1)[0], 16)
        if size == 0:
            break
        await _copy_exactly(reader, size + 2, sink)
    while (line := await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
        sink(line)
    sink(line)


async def _copy_exactly(
    reader: asyncio.StreamReader, size: int, sink: Callable[[bytes], None]
) -> None:
    while size > 0:
        data = await reader.read(min(size, READ_BYTES))
        if not data:
            raise ConnectionError(f"client closed the connection {size} bytes before a body's end")
        sink(data)
        size -= len(data)


def reset_abruptly(writer: asyncio.StreamWriter) -> None:
    """Close `writer`'s connection with a TCP reset instead of a FIN."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class _Cut(Exception):
    """A connection reset on purpose."""


class _Pacer:
    """A token bucket: `take(n)` returns once `n` more bytes fit in `rate` with `burst` saved up."""

    def __init__(self) -> None:
        self._free_at = 0.0

    async def take(self, n: int, rate: float, burst: int) -> None:
        now = time.monotonic()
        self._free_at = max(self._free_at, now - burst / rate) + n / rate
        if self._free_at > now:
            await asyncio.sleep(self._free_at - now)


class _Connection:
    """One client connection and its upstream one; what the response on its way back may do."""

    def __init__(self, proxy: ShapingProxy, client: asyncio.StreamWriter) -> None:
        self.proxy, self.client = proxy, client
        self.upstream: asyncio.StreamWriter | None = None
        self.release_at = 0.0  # no byte of the response before this time
        self.cut_after: int | None = None  # reset once this many bytes of the response are out
        self.sent = 0  # bytes of the current response sent
        self._pacer = _Pacer()

    def expect_response(self, arrived: float, cut_after: int | None) -> None:
        self.release_at = arrived + self.proxy.delay_s
        self.cut_after, self.sent = cut_after, 0

    async def forward(self, data: bytes) -> None:
        """Send response bytes `data` to the client: delayed, paced, and cut if it is time."""
        wait = self.release_at - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        if self.cut_after is not None and self.sent + len(data) >= self.cut_after:
            await self._send(data[: self.cut_after - self.sent])
            await self._reset()
        await self._send(data)

    async def _send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            rate, burst = self.proxy.rate_bytes_per_s, self.proxy.burst_bytes
            n = len(view) if rate is None else min(len(view), burst)
            if rate is not None:
                await self._pacer.take(n, rate, burst)
            self.client.write(view[:n])
            await self.client.drain()
            self.sent += n
            self.proxy.bytes_to_clients += n
            view = view[n:]

    async def _reset(self) -> None:
        deadline = time.monotonic() + _FLUSH_TIMEOUT_S
        while self.client.transport.get_write_buffer_size() and time.monotonic() < deadline:
            await asyncio.sleep(0.001)  # what was sent reaches the client before the reset
        reset_abruptly(self.client)
        if self.upstream is not None:
            self.upstream.transport.abort()
        self.proxy.resets += 1
        raise _Cut


class ShapingProxy:
    """Forwards 127.0.0.1:<free port> to `upstream` (`http://host:port`), shaped and faulty.

    `delay_s`, `rate_bytes_per_s` (None: unlimited) and `burst_bytes` may change at any time, and
    apply to the responses that follow. Counters: `connections`, `requests`, `bytes_to_clients`
    (response bytes forwarded), `bytes_to_server`, `slowdowns` and `resets` (faults done); `seen`
    lists every request."""

    def __init__(
        self,
        upstream: str,
        *,
        delay_s: float = 0.0,
        rate_bytes_per_s: float | None = None,
        burst_bytes: int = 64 * 1024,
    ) -> None:
        parts = urlsplit(upstream)
        if parts.hostname is None or parts.port is None:
            raise ValueError(f"upstream {upstream!r} is not http://host:port")
        self.upstream = (parts.hostname, parts.port)
        self.delay_s = delay_s
        self.rate_bytes_per_s = rate_bytes_per_s
        self.burst_bytes = burst_bytes
        self.connections = self.requests = self.bytes_to_clients = self.bytes_to_server = 0
        self.slowdowns = self.resets = 0
        self.seen: list[Seen] = []
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.port = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # Faults ---------------------------------------------------------------------------------

    def throttle(self, count: int, path: str = "") -> None:
        """Answer the next `count` requests whose target contains `path` with 503 SlowDown."""
        self._add(_Rule("slowdown", path, count))

    def reset(self, count: int, path: str = "", after_bytes: int = 0) -> None:
        """Reset the connection of each of the next `count` requests whose target contains `path`
        once `after_bytes` bytes of its response are out (a shorter response goes through)."""
        self._add(_Rule("reset", path, count, after_bytes))

    def unavailable(self, path: str, fault: Fault = "slowdown", after_bytes: int = 0) -> None:
        """Every request whose target contains `path` meets `fault`, until `clear()`."""
        self._add(_Rule(fault, path, None, after_bytes))

    def clear(self) -> None:
        """Drop every fault still to come."""
        with self._lock:
            self._rules.clear()

    def requests_to(self, path: str) -> list[Seen]:
        """The requests seen so far whose target contains `path`."""
        with self._lock:
            return [s for s in self.seen if path in s.target]

    def _add(self, rule: _Rule) -> None:
        if rule.count is not None and rule.count < 0:
            raise ValueError(f"a fault for {rule.count} requests")
        with self._lock:
            self._rules.append(rule)

    def _take_fault(self, request: _Request) -> _Rule | None:
        """The first rule that `request` meets (one of its `count` used up); it is recorded."""
        with self._lock:
            found = None
            for rule in self._rules:
                if rule.path in request.target and rule.count != 0:
                    found = rule
                    if rule.count is not None:
                        rule.count -= 1
                    break
            fault = None if found is None else found.fault
            self.seen.append(Seen(request.method, request.target, fault))
            self.requests += 1
            return None if found is None else dataclasses.replace(found)

    # Life -----------------------------------------------------------------------------------

    def start(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="shaping-proxy", daemon=True)
        self._thread.start()
        try:
            self._server = self._run(
                asyncio.start_server(self._serve, "127.0.0.1", 0, limit=HEAD_LIMIT)
            )
        except BaseException:
            self.stop()
            raise
        self.port = self._server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        self._run(self._close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
        self._loop = self._thread = None

    def _run(self, coroutine: Awaitable[Any]) -> Any:
        assert self._loop is not None
        return asyncio.run_coroutine_threadsafe(_awaited(coroutine), self._loop).result()

    async def _close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def __enter__(self) -> ShapingProxy:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # Forwarding -----------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, client: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self.connections += 1
        conn = _Connection(self, client)
        directions: list[asyncio.Task[None]] = []
        try:
            up_reader, conn.upstream = await asyncio.open_connection(
                *self.upstream, limit=4 * READ_BYTES
            )
            directions.append(asyncio.create_task(self._responses(up_reader, conn)))
            directions.append(asyncio.create_task(self._requests(reader, conn)))
            await asyncio.wait(directions, return_when=asyncio.FIRST_COMPLETED)
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            for direction in directions:  # when one direction ends, the connection does
                direction.cancel()
            await asyncio.gather(*directions, return_exceptions=True)
            for writer in (client, conn.upstream):
                if writer is not None and not writer.transport.is_closing():
                    writer.close()
            self._tasks.discard(task)

    async def _responses(self, upstream: asyncio.StreamReader, conn: _Connection) -> None:
        """Upstream's bytes to the client until upstream closes (or a reset cuts both)."""
        with contextlib.suppress(OSError, _Cut):
            while data := await upstream.read(READ_BYTES):
                await conn.forward(data)
            await conn.client.drain()

    async def _requests(self, reader: asyncio.StreamReader, conn: _Connection) -> None:
        """The client's requests, one by one, to upstream or answered here, until the client
        closes (or a 503 closes a connection whose request had a body)."""
        assert conn.upstream is not None
        upstream = conn.upstream
        ends = (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError)
        with contextlib.suppress(*ends):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                arrived = time.monotonic()
                request = parse_head(head)
                rule = self._take_fault(request)
                if rule is not None and rule.fault == "slowdown":
                    if not await self._slowdown(request, conn, arrived):
                        return
                    continue
                conn.expect_response(arrived, None if rule is None else rule.after_bytes)
                upstream.write(head)
                self.bytes_to_server += len(head)
                await copy_body(reader, request, self._to_server(upstream))
                await upstream.drain()

    async def _slowdown(self, request: _Request, conn: _Connection, arrived: float) -> bool:
        """Answer `request` with 503 SlowDown; False if the connection closes after it (its body,
        perhaps held back for `100-continue`, is never read)."""
        keep = not request.has_body
        conn.expect_response(arrived, None)
        await conn.forward(slowdown_response(request, close=not keep))
        self.slowdowns += 1
        if not keep:
            await conn.client.drain()
            conn.client.close()
        return keep

    def _to_server(self, upstream: asyncio.StreamWriter) -> Callable[[bytes], None]:
        def sink(data: bytes) -> None:
            upstream.write(data)
            self.bytes_to_server += len(data)

        return sink


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


def via(storage_options: Mapping[str, Any], endpoint: str) -> dict[str, Any]:
    """`storage_options` (s3fs) sent to `endpoint` instead, with botocore's retries left to
    fastpack's default (one attempt per request: fastpack's `RetryPolicy` alone retries)."""
    options = dict(storage_options)
    options["client_kwargs"] = {**options.get("client_kwargs", {}), "endpoint_url": endpoint}
    config = dict(options.get("config_kwargs", {}))
    config.pop("retries", None)
    options["config_kwargs"] = config
    return options


@dataclass(frozen=True)
class ShapedS3:
    """The session's S3 server, a proxy in front of it, and storage options through the proxy
    (objects put straight to `server` are read through `proxy` with `storage_options`)."""

    server: S3Server
    proxy: ShapingProxy
    storage_options: dict[str, Any]


@pytest.fixture
def shaped_s3(s3_server: S3Server) -> Iterator[ShapedS3]:
    """A new `ShapingProxy` (no delay, no limit, no fault) in front of the session's server."""
    with ShapingProxy(s3_server.endpoint) as proxy:
        yield ShapedS3(s3_server, proxy, via(s3_server.storage_options, proxy.endpoint))
