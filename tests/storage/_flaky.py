"""A filesystem method that fails its first calls with a transport error, then goes through."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


class Flaky:
    """Wraps `call`: the first `failures` calls raise `ConnectionError` (as a dropped connection
    would), the later ones call through. `calls` counts every call, `failed` the failures."""

    def __init__(self, call: Callable[..., Any], failures: int) -> None:
        self.call, self.failures = call, failures
        self.calls = self.failed = 0
        self.args: list[tuple[Any, ...]] = []
        self._lock = threading.Lock()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            self.calls += 1
            self.args.append(args)
            fail = self.failed < self.failures
            if fail:
                self.failed += 1
            n = self.failed
        if fail:
            raise ConnectionError(f"injected failure {n} of {self.failures}")
        return self.call(*args, **kwargs)
