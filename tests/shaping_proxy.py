"""A network-shaping, fault-injecting HTTP/1.1 proxy in front of the test S3 server.

Loopback has no latency and no limit; an object store far away has both, throttles (503 SlowDown)
and drops connections. `ShapingProxy` listens on 127.0.0.1 (a free port), forwards each client
connection to the upstream server over a connection of its own, and on the way back:

- holds every response until `delay_s` has passed since its request arrived (time to first byte);
- paces each connection's responses to `rate_bytes_per_s` (a token bucket of `burst_bytes`) in
  pieces: the first of a response at most `burst_bytes`, the next ones `burst_bytes` or `PACE_S`
  at the rate, whichever is larger; a piece leaves once the bucket holds it all, so that no byte
  arrives before the rate allows, nor more than a piece's time after;
- answers requests chosen by `throttle` / `unavailable` itself with `503 Slow Down` and S3's XML
  error body (the request never reaches the server), and cuts those chosen by `reset` with a TCP
  reset (SO_LINGER 0, then close) after `after_bytes` bytes of their response.

It reads requests (request line, headers, a `Content-Length` or chunked body) to know where each
one ends, and does not read responses: clients of S3 wait for a response before the next request
on the same connection (no pipelining). Each connection has two threads of blocking sockets, one
per direction; the responses go from the server's socket to the client's through a pipe
(`os.splice`, where there is one: the bytes never enter Python) up to `READ_BYTES` at a time, so
that the proxy costs little CPU beside the client it shapes. Use it as a context manager.
Registered as a pytest plugin from tests/conftest.py: the fixture `shaped_s3` is a proxy in front
of the session's `s3_server` with storage options that go through it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import socket
import struct
import termios
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal
from urllib.parse import urlsplit
from xml.sax.saxutils import escape

import pytest

from tests.s3_server import S3Server

Fault = Literal["slowdown", "reset"]
READ_BYTES = 1024 * 1024  # the most bytes of a response moved at a time
HEAD_LIMIT = 64 * 1024
PACE_S = 0.02  # a paced piece is at least this long at the rate
_FLUSH_TIMEOUT_S = 2.0
_SLEEP_S = 0.05  # shorter waits sleep (cheaper than an Event's), and look for the end after


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


class _Ended(Exception):
    """The connection is over: a side closed it, the proxy stopped, or a reset cut it."""


class _Reader:
    """Buffered reads of the client's requests from a blocking socket."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = bytearray()

    def read_until(self, separator: bytes, limit: int) -> bytes:
        """The bytes up to and with the next `separator` (`ValueError` past `limit` bytes)."""
        start = 0
        while (end := self._buffer.find(separator, start)) < 0:
            if len(self._buffer) > limit:
                raise ValueError(f"no {separator!r} in the first {limit} bytes of a request")
            start = max(0, len(self._buffer) - len(separator) + 1)
            self._fill()
        return self._take(end + len(separator))

    def read_some(self, most: int) -> bytes:
        """Between 1 and `most` bytes."""
        if not self._buffer:
            self._fill()
        return self._take(min(most, len(self._buffer)))

    def _take(self, n: int) -> bytes:
        data = bytes(self._buffer[:n])
        del self._buffer[:n]
        return data

    def _fill(self) -> None:
        data = self._sock.recv(HEAD_LIMIT)  # requests are small: no 1 MiB buffer each
        if not data:
            raise _Ended
        self._buffer += data


def copy_body(reader: _Reader, request: _Request, sink: Callable[[bytes], None]) -> None:
    """Pass the body of `request` from `reader` to `sink`."""
    if not request.chunked:
        _copy_exactly(reader, request.length, sink)
        return
    while True:
        line = reader.read_until(b"\r\n", HEAD_LIMIT)
        sink(line)
        size = int(line.split(b";", 1)[0], 16)
        if size == 0:
            break
        _copy_exactly(reader, size + 2, sink)
    while (line := reader.read_until(b"\r\n", HEAD_LIMIT)) != b"\r\n":  # trailers
        sink(line)
    sink(line)


def _copy_exactly(reader: _Reader, size: int, sink: Callable[[bytes], None]) -> None:
    while size > 0:
        data = reader.read_some(size)
        sink(data)
        size -= len(data)


class _SpliceRelay:
    """The response bytes on their way: `fill(most)` moves up to `most` bytes that the server has
    sent into a pipe (0 at its end), `send(n)` moves `n` of them on to the client; they never
    enter Python."""

    def __init__(self, source: socket.socket, sink: socket.socket) -> None:
        self._source, self._sink = source.fileno(), sink.fileno()
        self._out, self._in = os.pipe2(os.O_CLOEXEC)
        with contextlib.suppress(OSError):  # over the pipe-size limits: the default size
            fcntl.fcntl(self._in, fcntl.F_SETPIPE_SZ, READ_BYTES)
        self._size = fcntl.fcntl(self._in, fcntl.F_GETPIPE_SZ)
        self.held = 0

    def fill(self, most: int) -> int:
        n = os.splice(self._source, self._in, min(most, self._size))
        self.held += n
        return n

    def send(self, n: int) -> None:
        while n > 0:
            done = os.splice(self._out, self._sink, n)
            n -= done
            self.held -= done

    def close(self) -> None:
        os.close(self._out)
        os.close(self._in)


class _CopyRelay:
    """`_SpliceRelay` where there is no `os.splice`: through a buffer of this process."""

    def __init__(self, source: socket.socket, sink: socket.socket) -> None:
        self._source, self._sink = source, sink
        self._view = memoryview(bytearray(READ_BYTES))
        self._start = self.held = 0

    def fill(self, most: int) -> int:
        n = self._source.recv_into(self._view, most)
        self._start, self.held = 0, n
        return n

    def send(self, n: int) -> None:
        self._sink.sendall(self._view[self._start : self._start + n])
        self._start += n
        self.held -= n

    def close(self) -> None:
        self._view.release()


def _relay(source: socket.socket, sink: socket.socket) -> _SpliceRelay | _CopyRelay:
    """A splicing relay from `source` to `sink` where the system has `os.splice` (Linux)."""
    return _SpliceRelay(source, sink) if hasattr(os, "splice") else _CopyRelay(source, sink)


def _unsent(sock: socket.socket) -> int:
    """Bytes written to `sock` that its peer has not acknowledged (0 where unknown)."""
    try:
        found = fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ, struct.pack("i", 0))
    except OSError:
        return 0
    return int(struct.unpack("i", found)[0])


class _Pacer:
    """A token bucket: `delay(n)` is how long to wait before `n` more bytes fit in `rate` with
    `burst` saved up (and takes them)."""

    def __init__(self) -> None:
        self._free_at = 0.0

    def delay(self, n: int, rate: float, burst: int) -> float:
        now = time.monotonic()
        self._free_at = max(self._free_at, now - burst / rate) + n / rate
        return self._free_at - now


class _Connection:
    """One client connection and its upstream one, a thread for each direction; what the
    response on its way back may do."""

    def __init__(self, proxy: ShapingProxy, client: socket.socket) -> None:
        self.proxy, self.client = proxy, client
        self.upstream: socket.socket | None = None
        self.release_at = 0.0  # no byte of the response before this time
        self.cut_after: int | None = None  # reset once this many bytes of the response are out
        self.sent = 0  # bytes of the current response sent
        self._pacer = _Pacer()
        self._sending = threading.Lock()  # the client's socket: a response, or a 503
        self._ending = threading.Lock()
        self._ended = threading.Event()
        self.thread = threading.Thread(target=self._run, name="shaping-proxy", daemon=True)

    def expect_response(self, arrived: float, cut_after: int | None) -> None:
        self.release_at = arrived + self.proxy.delay_s
        self.cut_after, self.sent = cut_after, 0

    def end(self, reset: bool = False) -> None:
        """Wake both directions so that the connection closes (with a TCP reset if `reset`: no
        FIN before it)."""
        with self._ending:
            if self._ended.is_set():
                return
            self._ended.set()
        with contextlib.suppress(OSError):
            self.client.shutdown(socket.SHUT_RD if reset else socket.SHUT_RDWR)
        if self.upstream is not None:
            with contextlib.suppress(OSError):
                self.upstream.shutdown(socket.SHUT_RDWR)

    def _run(self) -> None:
        """Connect upstream, forward requests here and responses in a second thread; close both
        connections once either direction ends."""
        try:
            upstream = socket.create_connection(self.proxy.upstream)
        except OSError:
            self.client.close()
            self.proxy._gone(self)
            return
        with self._ending:
            self.upstream = upstream
        for sock in (self.client, upstream):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        relay, responses = None, None
        try:
            relay = _relay(upstream, self.client)
            responses = threading.Thread(
                target=self._responses, args=(relay,), name="shaping-proxy-responses", daemon=True
            )
            if not self._ended.is_set():
                responses.start()
                with contextlib.suppress(OSError, ValueError, _Ended):
                    self._requests(upstream)
        finally:
            self.end()
            if responses is not None and responses.ident is not None:  # started
                responses.join()
            self.client.close()
            upstream.close()
            if relay is not None:
                relay.close()
            self.proxy._gone(self)

    def _requests(self, upstream: socket.socket) -> None:
        """The client's requests, one by one, to upstream or answered here, until the client
        closes (or a 503 closes a connection whose request had a body)."""
        reader = _Reader(self.client)
        proxy = self.proxy

        def to_server(data: bytes) -> None:
            upstream.sendall(data)
            proxy._count("bytes_to_server", len(data))

        while True:
            head = reader.read_until(b"\r\n\r\n", HEAD_LIMIT)
            arrived = time.monotonic()
            request = parse_head(head)
            rule = proxy._take_fault(request)
            if rule is not None and rule.fault == "slowdown":
                if not self._slowdown(request, arrived):
                    return
                continue
            self.expect_response(arrived, None if rule is None else rule.after_bytes)
            to_server(head)
            copy_body(reader, request, to_server)

    def _slowdown(self, request: _Request, arrived: float) -> bool:
        """Answer `request` with 503 SlowDown; False if the connection closes after it (its body,
        perhaps held back for `100-continue`, is never read)."""
        keep = not request.has_body
        self.expect_response(arrived, None)
        view = memoryview(slowdown_response(request, close=not keep))
        self._wait(self.release_at - time.monotonic())

        def write(n: int) -> None:
            nonlocal view
            self.client.sendall(view[:n])
            view = view[n:]

        with self._sending:
            self._send(len(view), write)
        self.proxy._count("slowdowns", 1)
        return keep

    def _responses(self, relay: _SpliceRelay | _CopyRelay) -> None:
        """Upstream's bytes to the client until upstream closes (or a reset cuts both)."""
        try:
            while relay.fill(self._piece(READ_BYTES)):  # a paced piece at most
                self._wait(self.release_at - time.monotonic())
                with self._sending:
                    held, cut = relay.held, self.cut_after
                    if cut is not None and self.sent + held >= cut:
                        self._send(cut - self.sent, relay.send)
                        self._cut()
                    self._send(held, relay.send)
        except (OSError, _Ended):
            pass
        finally:
            self.end()

    def _send(self, n: int, write: Callable[[int], None]) -> None:
        """Write `n` bytes of the response with `write`, paced."""
        while n > 0:
            rate, burst = self.proxy.rate_bytes_per_s, self.proxy.burst_bytes
            piece = self._piece(n)
            if rate is not None:
                self._wait(self._pacer.delay(piece, rate, burst))
            write(piece)
            self.sent += piece
            self.proxy._count("bytes_to_clients", piece)
            n -= piece

    def _piece(self, n: int) -> int:
        """The most of `n` bytes to send at once: all of them unless paced."""
        rate, burst = self.proxy.rate_bytes_per_s, self.proxy.burst_bytes
        if rate is None:
            return n
        return min(n, burst if self.sent == 0 else max(burst, int(rate * PACE_S)))

    def _wait(self, seconds: float) -> None:
        """Sleep `seconds`, unless the connection ends first (`_Ended`)."""
        if seconds <= 0:
            return
        if seconds >= _SLEEP_S:
            if self._ended.wait(seconds):
                raise _Ended
            return
        time.sleep(seconds)
        if self._ended.is_set():
            raise _Ended

    def _cut(self) -> None:
        deadline = time.monotonic() + _FLUSH_TIMEOUT_S
        while _unsent(self.client) and time.monotonic() < deadline:
            time.sleep(0.001)  # what was sent reaches the client before the reset
        with contextlib.suppress(OSError):
            self.client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.end(reset=True)  # the reset itself when `_run` closes the socket
        self.proxy._count("resets", 1)
        raise _Ended


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
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._live: set[_Connection] = set()
        self._stopping = False
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

    def _count(self, counter: str, n: int) -> None:
        with self._lock:
            setattr(self, counter, getattr(self, counter) + n)

    # Life -----------------------------------------------------------------------------------

    def start(self) -> None:
        self._stopping = False
        self._listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, name="shaping-proxy", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        listener, thread, self._listener, self._thread = self._listener, self._thread, None, None
        if listener is None or thread is None:
            return
        self._stopping = True
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port)):
            pass  # wakes `_accept`
        thread.join()
        listener.close()
        with self._lock:
            live = list(self._live)
        for conn in live:
            conn.end()
        for conn in live:
            conn.thread.join()

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

    def _accept(self) -> None:
        listener = self._listener
        while listener is not None:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            if self._stopping:
                client.close()
                return
            conn = _Connection(self, client)
            with self._lock:
                self._live.add(conn)
                self.connections += 1
            conn.thread.start()

    def _gone(self, conn: _Connection) -> None:
        with self._lock:
            self._live.discard(conn)


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
