"""Retrying remote calls with exponential backoff and full jitter.

fastpack's `RetryPolicy` is the one retry layer that counts: on S3, reads go through obstore with
its retries off (`object_reads`), and the other calls through s3fs with its own retry loop off and
botocore's at one attempt (`urls.filesystem`), so a throttled (503 SlowDown), cut or reset call is
tried `attempts` times in all, each attempt one HTTP request per S3 operation (for s3fs's calls,
two where the connection closes before the response begins: aiohttp sends an idempotent request
once more then, RFC 9112 9.3.1). Where `config_kwargs` sets botocore's `retries`, both clients
also retry inside each attempt, as many times as set there. A missing object (404) and a missing
package are never retried.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .counts import IO_COUNTS
from .errors import FetchError

T = TypeVar("T")
log = logging.getLogger("fastpack.storage")


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """`attempts` tries in all. The wait after failure `i` is drawn uniformly from
    `[0, ceiling(i)]`, `ceiling(i) = min(backoff_s * 2**i, max_backoff_s)` ("full jitter": clients
    throttled together spread their retries instead of coming back in step); with
    `jitter=False` it is `ceiling(i)` itself."""

    attempts: int = 6
    backoff_s: float = 0.5
    max_backoff_s: float = 10.0
    jitter: bool = True

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.backoff_s < 0 or self.max_backoff_s < 0:
            raise ValueError(f"{self}: attempts must be >= 1 and waits >= 0")

    def ceiling(self, failure: int) -> float:
        """The longest wait after failure `failure` (counted from 0)."""
        return float(min(self.backoff_s * 2**failure, self.max_backoff_s))

    def wait(self, failure: int) -> float:
        ceiling = self.ceiling(failure)
        return random.uniform(0.0, ceiling) if self.jitter else ceiling


def retry_call(
    call: Callable[[], T],
    what: str,
    policy: RetryPolicy,
    permanent: tuple[type[BaseException], ...] = (),
) -> T:
    """`call()`, tried again after any exception but those in `permanent` and an `ImportError`
    (a missing package does not come back); after the last attempt a `FetchError` names `what`
    and the last error."""
    never: tuple[type[BaseException], ...] = (*permanent, ImportError)
    for failure in range(policy.attempts):
        try:
            return call()
        except never:
            raise
        except Exception as e:
            if failure + 1 == policy.attempts:
                raise FetchError(
                    f"{what}: unavailable after {policy.attempts} attempts; last error: "
                    f"{type(e).__name__}: {e}"
                ) from e
            IO_COUNTS.retried()
            wait = policy.wait(failure)
            log.warning("%s: %s: %s; retrying in %.2f s", what, type(e).__name__, e, wait)
            time.sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover
