"""Reads from a real S3 server through `ShapingProxy`: throttling (503 SlowDown) and connection
resets are retried by fastpack's `RetryPolicy` alone, exactly as many times as it says, and the
data comes back whole; a missing object is not retried; the proxy's delay and rate are real."""

from __future__ import annotations

import hashlib
import logging
import re
import time
from pathlib import Path

import numpy as np
import pytest
from fastpack.formats import DatasetNotFoundError
from fastpack.storage import Expected, FetchError, Location, RetryPolicy, Transfer

from tests.s3_server import S3Server
from tests.shaping_proxy import ShapedS3

QUICK = RetryPolicy(attempts=4, backoff_s=0.01, max_backoff_s=0.05)
DATA = np.random.default_rng(7).bytes(300_000)
SHA256 = hashlib.sha256(DATA).hexdigest()
KEY = "objects/data.bin"


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> str:
    """A bucket holding `KEY`, put straight to the server."""
    bucket = s3_server.new_bucket()
    s3_server.filesystem().pipe(f"{bucket}/{KEY}", DATA)
    return bucket


@pytest.fixture
def location(shaped_s3: ShapedS3, bucket: str) -> Location:
    """A `Location` at `bucket` through the proxy."""
    return Location(f"s3://{bucket}", shaped_s3.storage_options, retry=QUICK)


def download(location: Location, dest: Path, threads: int = 3) -> bytes:
    """`KEY` in ranged GETs of 100,000 bytes, checked against its SHA-256."""
    expected = Expected(size=len(DATA), sha256=SHA256)
    location.download(KEY, dest, expected, Transfer(part_bytes=100_000, threads=threads))
    return dest.read_bytes()


def faults(shaped_s3: ShapedS3, path: str) -> list[str | None]:
    return [seen.fault for seen in shaped_s3.proxy.requests_to(path)]


def test_waits_are_jittered_below_their_ceiling() -> None:
    policy = RetryPolicy(backoff_s=0.1, max_backoff_s=0.5)
    waits = [[policy.wait(i) for _ in range(200)] for i in range(5)]
    for i, drawn in enumerate(waits):
        assert all(0.0 <= w <= policy.ceiling(i) for w in drawn)
        assert max(drawn) - min(drawn) > policy.ceiling(i) / 2
    assert [policy.ceiling(i) for i in range(5)] == pytest.approx([0.1, 0.2, 0.4, 0.5, 0.5])
    steady = RetryPolicy(backoff_s=0.1, max_backoff_s=0.5, jitter=False)
    assert [steady.wait(i) for i in range(4)] == pytest.approx([0.1, 0.2, 0.4, 0.5])


def test_slowdown_for_the_first_requests_is_retried(
    shaped_s3: ShapedS3, location: Location, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    shaped_s3.proxy.throttle(3, KEY)
    with caplog.at_level(logging.WARNING, logger="fastpack.storage"):
        assert download(location, tmp_path / "data.bin") == DATA
    assert shaped_s3.proxy.slowdowns == 3
    seen = faults(shaped_s3, KEY)
    assert (seen.count("slowdown"), seen.count(None), len(seen)) == (3, 3, 6)
    retries = [r.getMessage() for r in caplog.records]
    assert len(retries) == 3
    assert all("reduce your request rate" in m for m in retries), retries


def test_resets_mid_response_are_retried(
    shaped_s3: ShapedS3, location: Location, tmp_path: Path
) -> None:
    shaped_s3.proxy.reset(2, KEY, after_bytes=40_000)  # inside a 100,000-byte body
    assert hashlib.sha256(download(location, tmp_path / "data.bin")).hexdigest() == SHA256
    assert shaped_s3.proxy.resets == 2
    assert faults(shaped_s3, KEY).count(None) == 3
    shaped_s3.proxy.reset(1, KEY)  # before the first byte of the response
    assert location.read_range(KEY, 1000, 2000) == DATA[1000:2000]
    assert shaped_s3.proxy.resets == 3


@pytest.mark.parametrize("throttled", [3, 4])
def test_attempts_are_those_of_the_policy_and_no_more(
    shaped_s3: ShapedS3, location: Location, throttled: int
) -> None:
    """Neither s3fs nor botocore retries on its own: the proxy sees one request per attempt."""
    shaped_s3.proxy.throttle(throttled, KEY)
    if throttled < QUICK.attempts:
        assert location.read_range(KEY, 0, 10) == DATA[:10]
    else:
        pattern = (
            rf"{location.url}/{KEY} \[0, 10\): unavailable after 4 attempts; "
            r"last error: OSError: .*reduce your request rate"
        )
        with pytest.raises(FetchError, match=pattern):
            location.read_range(KEY, 0, 10)
    assert len(faults(shaped_s3, KEY)) == min(throttled + 1, QUICK.attempts)


def test_botocore_retries_set_in_the_options_are_kept(
    shaped_s3: ShapedS3, location: Location
) -> None:
    config = {**shaped_s3.storage_options["config_kwargs"], "retries": {"total_max_attempts": 2}}
    options = {**shaped_s3.storage_options, "config_kwargs": config}
    own = Location(location.url, options, retry=RetryPolicy(attempts=1))
    shaped_s3.proxy.throttle(1, KEY)
    assert own.read_range(KEY, 0, 10) == DATA[:10]
    assert faults(shaped_s3, KEY) == ["slowdown", None]


def test_a_path_that_stays_unavailable_fails_after_the_attempts(
    shaped_s3: ShapedS3, location: Location
) -> None:
    shaped_s3.proxy.unavailable(KEY, "reset", after_bytes=1000)  # after the headers
    with pytest.raises(
        FetchError, match=rf"{location.url}/{KEY} \[0, 5000\): unavailable after 4 attempts"
    ):
        location.read_range(KEY, 0, 5000)
    assert faults(shaped_s3, KEY) == ["reset"] * 4
    assert shaped_s3.proxy.resets == 4
    shaped_s3.proxy.clear()
    assert location.read_bytes(KEY) == DATA


def test_a_connection_closed_before_the_response_is_tried_twice_per_attempt(
    shaped_s3: ShapedS3, location: Location
) -> None:
    """aiohttp sends an idempotent request once more by itself when its connection closes before
    the response begins (RFC 9112, 9.3.1); each attempt is then two requests."""
    twice = Location(
        location.url, shaped_s3.storage_options, retry=RetryPolicy(attempts=2, backoff_s=0.01)
    )
    shaped_s3.proxy.unavailable(KEY, "reset")
    with pytest.raises(FetchError, match=r"unavailable after 2 attempts"):
        twice.read_range(KEY, 0, 10)
    assert faults(shaped_s3, KEY) == ["reset"] * 4


def test_a_missing_object_is_not_retried(
    shaped_s3: ShapedS3, location: Location, tmp_path: Path
) -> None:
    with pytest.raises(DatasetNotFoundError, match=rf"{location.url}/absent: not found"):
        location.read_bytes("absent")
    assert location.size("absent") is None
    with pytest.raises(DatasetNotFoundError, match=rf"{location.url}/absent: not found"):
        location.download("absent", tmp_path / "absent", Expected(size=10, sha256="0" * 64))
    tried = [
        s.method for s in shaped_s3.proxy.requests_to("/absent") if s.target.endswith("absent")
    ]
    assert tried == ["HEAD", "HEAD", "GET"]  # one request each
    assert shaped_s3.proxy.slowdowns == shaped_s3.proxy.resets == 0


def test_the_delay_and_the_rate_are_real(shaped_s3: ShapedS3, location: Location) -> None:
    proxy = shaped_s3.proxy
    assert location.read_range(KEY, 0, 10) == DATA[:10]  # the connection is open
    proxy.delay_s = 0.15
    start = time.monotonic()
    assert location.read_range(KEY, 0, 10) == DATA[:10]
    assert time.monotonic() - start >= proxy.delay_s
    proxy.delay_s, proxy.rate_bytes_per_s, proxy.burst_bytes = 0.0, 1_000_000, 16_384
    start = time.monotonic()
    assert location.read_range(KEY, 0, len(DATA)) == DATA
    elapsed = time.monotonic() - start
    assert elapsed >= 0.9 * (len(DATA) - proxy.burst_bytes) / proxy.rate_bytes_per_s
    assert proxy.bytes_to_clients > len(DATA)
    assert proxy.requests == 3
    assert proxy.connections >= 1
    assert re.fullmatch(r"http://127\.0\.0\.1:\d+", proxy.endpoint)
