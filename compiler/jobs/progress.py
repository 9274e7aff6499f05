"""The build's progress bar on stderr: samples/s and ETA from tqdm, input MB/s beside them."""

from __future__ import annotations

import sys
import time
from types import TracebackType

from tqdm import tqdm

POSTFIX_SECONDS = 0.5


class ThrottledProgress:
    """Adds up progress increments and passes them on (`send`) every `seconds` at most, and
    on `flush`: for workers that report to a build process or a cluster's client."""

    def __init__(self, seconds: float) -> None:
        self._seconds = seconds
        self._pending = [0, 0]
        self._last = time.monotonic()

    def __call__(self, samples: int, nbytes: int) -> None:
        self._pending[0] += samples
        self._pending[1] += nbytes
        if time.monotonic() - self._last >= self._seconds:
            self.flush()

    def flush(self) -> None:
        if self._pending != [0, 0]:
            self.send(self._pending[0], self._pending[1])
        self._pending = [0, 0]
        self._last = time.monotonic()

    def send(self, samples: int, nbytes: int) -> None:
        raise NotImplementedError


class BuildProgress:
    """Called with increments `(inputs done, input bytes read)`; a no-op when disabled."""

    def __init__(self, total: int, done: int, *, enabled: bool) -> None:
        self._bar = tqdm(
            total=total,
            initial=done,
            unit="img",
            desc="fastpack build",
            file=sys.stderr,
            disable=not enabled,
            dynamic_ncols=True,
            smoothing=0.1,
        )
        self._enabled = enabled
        self._bytes = 0
        self._start = self._shown = time.monotonic()

    def __call__(self, samples: int, nbytes: int) -> None:
        if not self._enabled:
            return
        self._bytes += nbytes
        self._bar.update(samples)
        now = time.monotonic()
        if now - self._shown >= POSTFIX_SECONDS:
            self._shown = now
            rate = self._bytes / max(now - self._start, 1e-9) / 1e6
            self._bar.set_postfix_str(f"{rate:,.1f} MB/s", refresh=False)

    def __enter__(self) -> BuildProgress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._bar.close()
