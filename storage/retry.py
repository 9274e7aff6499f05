"""Retrying remote calls with exponential backoff."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .errors import FetchError

T = TypeVar("T")
log = logging.getLogger("fastpack.storage")


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """`attempts` tries in all; the wait after failure `i` is `backoff_s * 2**i`, at most
    `max_backoff_s`."""

    attempts: int = 6
    backoff_s: float = 0.5
    max_backoff_s: float = 10.0

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.backoff_s < 0 or self.max_backoff_s < 0:
            raise ValueError(f"{self}: attempts must be >= 1 and waits >= 0")

    def wait(self, failure: int) -> float:
        return float(min(self.backoff_s * 2**failure, self.max_backoff_s))


def retry_call(
    call: Callable[[], T],
    what: str,
    policy: RetryPolicy,
    permanent: tuple[type[BaseException], ...] = (),
) -> T:
    """`call()`, tried again after any exception but those in `permanent`; after the last
    attempt a `FetchError` names `what` and the last error."""
    for failure in range(policy.attempts):
        try:
            return call()
        except permanent:
            raise
        except Exception as e:
            if failure + 1 == policy.attempts:
                raise FetchError(
                    f"{what}: unavailable after {policy.attempts} attempts; last error: "
                    f"{type(e).__name__}: {e}"
                ) from e
            wait = policy.wait(failure)
            log.warning("%s: %s: %s; retrying in %.2f s", what, type(e).__name__, e, wait)
            time.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover
