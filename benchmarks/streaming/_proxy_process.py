"""The shaping proxy (`tests.shaping_proxy.ShapingProxy`) in a process of its own, so that its
CPU is not counted as the loader's: a benchmark reads its own CPU and its children's, and this
process is reaped only when the benchmark closes it."""

from __future__ import annotations

import multiprocessing
import time
from multiprocessing.connection import Connection
from typing import Any


class ProxyProcess:
    """A proxy to `upstream` capping each connection at `rate_bytes_per_s`, with a settable
    first-byte delay; counts the response bytes it forwarded and its own CPU seconds."""

    def __init__(self, upstream: str, rate_bytes_per_s: float | None) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(
            target=_serve, args=(child, upstream, rate_bytes_per_s), daemon=True
        )
        self._process.start()
        self.endpoint: str = self._conn.recv()

    def _ask(self, *request: Any) -> Any:
        self._conn.send(request)
        return self._conn.recv()

    def set_delay(self, delay_s: float) -> None:
        self._ask("delay", delay_s)

    @property
    def bytes_to_clients(self) -> int:
        return int(self._ask("bytes"))

    @property
    def cpu_s(self) -> float:
        return float(self._ask("cpu"))

    def close(self) -> None:
        self._ask("stop")
        self._process.join(10)

    def __enter__(self) -> ProxyProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _serve(conn: Connection, upstream: str, rate_bytes_per_s: float | None) -> None:
    from tests.shaping_proxy import ShapingProxy  # noqa: PLC0415 -- checkout

    with ShapingProxy(upstream, rate_bytes_per_s=rate_bytes_per_s) as proxy:
        conn.send(proxy.endpoint)
        while True:
            request = conn.recv()
            if request[0] == "delay":
                proxy.delay_s = request[1]
                conn.send(None)
            elif request[0] == "bytes":
                conn.send(proxy.bytes_to_clients)
            elif request[0] == "cpu":
                conn.send(time.process_time())
            else:
                conn.send(None)
                return
