"""A TCP proxy on 127.0.0.1 that gives a loopback connection the latency and bandwidth of a link.

This kernel has no netem, so the network file system of the tests and benchmarks (sshfs to an
sshd on 127.0.0.1) goes through this proxy. Every chunk the server sends is held until
`delay_s` after it arrived, then sent on in order (chunks in flight overlap, as on a real link:
the delay adds to each round trip and takes nothing from the bandwidth), paced to
`rate_bytes_per_s` over all connections together when that is set. What the client sends goes
to the server at once, so `delay_s` is the round trip added. Unlike `ShapingProxy` it knows no
protocol.

`LatencyProxy` runs it in a process of its own (`python tests/latency_proxy.py`): a process that
reads the mount through a memory map faults its pages in while holding its GIL, so a proxy thread
in that process could never send the bytes the fault waits for. Use it as a context manager;
`bytes_to_clients()` asks it how many bytes the server has sent through it so far.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
import time
from collections import deque
from types import TracebackType


class _Link:
    """The bandwidth shared by every connection: `reserve(n, ...)` is when `n` more bytes are
    out, if they may leave at `earliest`."""

    def __init__(self) -> None:
        self._free_at = 0.0

    def reserve(self, n: int, rate: float | None, earliest: float) -> float:
        if rate is None:
            return earliest
        self._free_at = max(self._free_at, earliest) + n / rate
        return self._free_at


class _Upstream(asyncio.Protocol):
    """The server's side of one connection: each chunk it sends is queued with its due time
    and written to the client then, in order (one timer per connection, for the first due)."""

    def __init__(self, forwarder: _Forwarder, client: asyncio.Transport) -> None:
        self.forwarder, self.client = forwarder, client
        self.transport: asyncio.Transport | None = None
        self._queue: deque[tuple[float, bytes]] = deque()
        self._timer: asyncio.TimerHandle | None = None
        self._closing = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        f = self.forwarder
        due = f.link.reserve(len(data), f.rate_bytes_per_s, time.monotonic() + f.delay_s)
        self._queue.append((due, data))
        if self._timer is None:
            self._flush()

    def _flush(self) -> None:
        self._timer = None
        now = time.monotonic()
        while self._queue and self._queue[0][0] <= now:
            data = self._queue.popleft()[1]
            self.client.write(data)
            self.forwarder.bytes_to_clients += len(data)
        if self._queue:
            loop = asyncio.get_running_loop()
            self._timer = loop.call_at(self._queue[0][0] - now + loop.time(), self._flush)
        elif self._closing:
            self.client.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self._closing = True
        if self._timer is None:
            self._flush()


class _Client(asyncio.Protocol):
    """The client's side of one connection: its bytes go to the server at once."""

    def __init__(self, forwarder: _Forwarder) -> None:
        self.forwarder = forwarder
        self.transport: asyncio.Transport | None = None
        self.upstream: _Upstream | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not isinstance(transport, asyncio.Transport):
            raise TypeError(f"a stream transport expected, got {transport!r}")
        self.transport = transport
        transport.pause_reading()  # until the server's side is connected
        asyncio.get_running_loop().create_task(self._connect(transport))

    async def _connect(self, client: asyncio.Transport) -> None:
        loop = asyncio.get_running_loop()
        try:
            _, upstream = await loop.create_connection(
                lambda: _Upstream(self.forwarder, client), *self.forwarder.upstream
            )
        except OSError:
            client.close()
            return
        self.upstream = upstream
        client.resume_reading()

    def data_received(self, data: bytes) -> None:
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.write(data)

    def pause_writing(self) -> None:  # the client reads slower than the server sends
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.upstream is not None and self.upstream.transport is not None:
            self.upstream.transport.close()


class _Forwarder:
    """Forwards 127.0.0.1:<free port> to `upstream` `(host, port)` from an asyncio loop in a
    background thread of this process."""

    def __init__(
        self,
        upstream: tuple[str, int],
        *,
        delay_s: float = 0.0,
        rate_bytes_per_s: float | None = None,
    ) -> None:
        self.upstream = upstream
        self.delay_s = delay_s
        self.rate_bytes_per_s = rate_bytes_per_s
        self.bytes_to_clients = 0
        self.port = 0
        self.link = _Link()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.Server | None = None

    def start(self) -> None:
        loop = self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=loop.run_forever, name="latency-proxy", daemon=True)
        self._thread.start()
        server = asyncio.run_coroutine_threadsafe(
            loop.create_server(lambda: _Client(self), "127.0.0.1", 0), loop
        ).result()
        self._server = server
        self.port = server.sockets[0].getsockname()[1]

    def stop(self) -> None:
        loop, thread, self._loop, self._thread = self._loop, self._thread, None, None
        if loop is None or thread is None:
            return
        if self._server is not None:
            loop.call_soon_threadsafe(self._server.close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join()


class LatencyProxy:
    """A `_Forwarder` in a child process: 127.0.0.1:`port` to `upstream`, every chunk the server
    sends held `delay_s`, all of them paced to `rate_bytes_per_s` (None: unlimited)."""

    def __init__(
        self,
        upstream: tuple[str, int],
        *,
        delay_s: float = 0.0,
        rate_bytes_per_s: float | None = None,
    ) -> None:
        self.upstream, self.delay_s, self.rate_bytes_per_s = upstream, delay_s, rate_bytes_per_s
        self.port = 0
        self._sent = 0  # the count when it stopped
        self._process: subprocess.Popen[str] | None = None

    def bytes_to_clients(self) -> int:
        """Bytes the server has sent through the proxy so far (all of them once it stopped)."""
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            return self._sent
        process.stdin.write("count\n")
        process.stdin.flush()
        return int(process.stdout.readline())

    def start(self) -> None:
        host, port = self.upstream
        rate = "" if self.rate_bytes_per_s is None else str(self.rate_bytes_per_s)
        self._process = subprocess.Popen(
            [sys.executable, __file__, host, str(port), str(self.delay_s), rate],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self._process.stdout.readline() if self._process.stdout else ""
        if not line.strip().isdigit():
            self.stop()
            raise RuntimeError(f"the latency proxy did not start: {line!r}")
        self.port = int(line)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        out, _ = process.communicate("stop\n", timeout=30)  # it prints its byte count and ends
        with contextlib.suppress(ValueError, IndexError):
            self._sent = int(out.split()[-1])

    def __enter__(self) -> LatencyProxy:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _serve_until_told(argv: list[str]) -> None:
    """The child process: print the port, then forward; on each `count` line on stdin print
    the bytes sent to clients so far; on any other line (or EOF) print them and end."""
    host, port, delay, rate = argv
    forwarder = _Forwarder(
        (host, int(port)), delay_s=float(delay), rate_bytes_per_s=float(rate) if rate else None
    )
    forwarder.start()
    print(forwarder.port, flush=True)
    while sys.stdin.readline().strip() == "count":
        print(forwarder.bytes_to_clients, flush=True)
    forwarder.stop()
    print(forwarder.bytes_to_clients, flush=True)


if __name__ == "__main__":
    _serve_until_told(sys.argv[1:])
