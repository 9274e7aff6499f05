"""Bulk downloads (a dataset's shards) on S3 go through obstore: the bytes come back whole and
are hashed while in memory, faults are retried by fastpack's `RetryPolicy` alone (one request
per attempt), and a process forked from one that used obstore falls back to s3fs instead of
hanging. Against a real S3 server (SeaweedFS on 127.0.0.1) through `ShapingProxy`."""

from __future__ import annotations

import hashlib
import itertools
import multiprocessing
from pathlib import Path

import google_crc32c
import numpy as np
import pytest
from fastpack.formats import ChecksumMismatchError, DatasetNotFoundError
from fastpack.storage import Expected, FetchError, Location, RetryPolicy, Transfer
from fastpack.storage.download import InOrderDigest
from fastpack.storage.object_reads import FsspecReads, ObstoreS3Reads, native_allowed

from tests.s3_server import S3Server
from tests.shaping_proxy import ShapedS3

QUICK = RetryPolicy(attempts=3, backoff_s=0.01, max_backoff_s=0.05)
DATA = np.random.default_rng(11).bytes(3_000_000)
SHA256 = hashlib.sha256(DATA).hexdigest()
KEY = "objects/bulk.bin"
PART = 1_000_000  # three parts


@pytest.fixture(scope="module")
def bucket(s3_server: S3Server) -> str:
    bucket = s3_server.new_bucket()
    s3_server.filesystem().pipe(f"{bucket}/{KEY}", DATA)
    return bucket


@pytest.fixture
def location(shaped_s3: ShapedS3, bucket: str) -> Location:
    return Location(f"s3://{bucket}", shaped_s3.storage_options, retry=QUICK)


def bulk_download(location: Location, dest: Path, sha256: str = SHA256) -> bytes:
    location.download(
        KEY,
        dest,
        Expected(size=len(DATA), sha256=sha256),
        Transfer(part_bytes=PART, threads=3, bulk=True),
    )
    return dest.read_bytes()


def faults(shaped_s3: ShapedS3) -> list[str | None]:
    return [seen.fault for seen in shaped_s3.proxy.requests_to(KEY)]


def test_a_bulk_download_goes_through_obstore_and_comes_back_whole(
    location: Location, shaped_s3: ShapedS3, tmp_path: Path
) -> None:
    assert isinstance(location.bulk_reads(), ObstoreS3Reads)
    assert bulk_download(location, tmp_path / "a") == DATA
    assert faults(shaped_s3) == [None] * 3  # one ranged GET per part
    assert [p.name for p in tmp_path.iterdir()] == ["a"]  # no part file left


def test_a_reset_mid_body_and_a_slowdown_are_retried_once_each(
    location: Location, shaped_s3: ShapedS3, tmp_path: Path
) -> None:
    shaped_s3.proxy.reset(1, KEY, after_bytes=200_000)
    shaped_s3.proxy.throttle(1, KEY)
    assert bulk_download(location, tmp_path / "a") == DATA
    seen = faults(shaped_s3)
    assert (seen.count(None), seen.count("reset"), seen.count("slowdown")) == (3, 1, 1)


def test_a_part_that_stays_unavailable_fails_after_the_policy_s_attempts(
    location: Location, shaped_s3: ShapedS3, tmp_path: Path
) -> None:
    shaped_s3.proxy.unavailable(KEY, "reset", after_bytes=1000)
    with pytest.raises(FetchError, match=rf"{location.url}/{KEY}: unavailable after 3 attempts"):
        bulk_download(location, tmp_path / "a")
    assert faults(shaped_s3).count("reset") == 9  # three parts, three attempts each, no more
    assert not list(tmp_path.iterdir())


def test_bytes_that_do_not_match_the_digest_are_refused(location: Location, tmp_path: Path) -> None:
    with pytest.raises(ChecksumMismatchError, match=rf"{location.url}/{KEY}: sha256 .* {SHA256}"):
        bulk_download(location, tmp_path / "a", sha256="0" * 64)
    assert not list(tmp_path.iterdir())


def test_a_missing_object_is_one_request(
    location: Location, shaped_s3: ShapedS3, tmp_path: Path
) -> None:
    with pytest.raises(DatasetNotFoundError, match=rf"{location.url}/absent.bin: not found"):
        location.download(
            "absent.bin", tmp_path / "x", Expected(size=10, sha256="0" * 64), Transfer(bulk=True)
        )
    assert len(shaped_s3.proxy.requests_to("absent.bin")) == 1


def _child(location: Location, dest: Path, answer: multiprocessing.SimpleQueue[object]) -> None:
    reads = location.bulk_reads()
    data = bulk_download(location, dest)
    answer.put((native_allowed(), type(reads).__name__, data == DATA))


def test_a_process_forked_after_obstore_ran_downloads_through_s3fs(
    location: Location, tmp_path: Path
) -> None:
    """obstore's runtime does not survive a fork (the child would hang): the child uses s3fs."""
    assert bulk_download(location, tmp_path / "parent") == DATA  # obstore runs here now
    context = multiprocessing.get_context("fork")
    answer: multiprocessing.SimpleQueue[object] = context.SimpleQueue()
    child = context.Process(target=_child, args=(location, tmp_path / "child", answer))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert answer.get() == (False, FsspecReads.__name__, True)
    assert native_allowed()  # the parent goes on with obstore


def test_the_digest_of_ranges_in_any_order_and_sent_again_is_that_of_the_object() -> None:
    """Parts finish in any order, a retried part sends its start again (cut elsewhere)."""
    rng = np.random.default_rng(3)
    data = rng.bytes(100_000)
    pieces = []
    for start in range(0, len(data), 10_000):
        cuts = sorted({start, *rng.integers(start, start + 10_000, 3).tolist(), start + 10_000})
        pieces += [(a, data[a:b]) for a, b in itertools.pairwise(cuts)]
    resent = [(a, data[a : a + 5_000]) for a, _ in pieces[::4]]  # a failed attempt's start
    order = rng.permutation(len(pieces) + len(resent))
    everything = pieces + resent
    digest = InOrderDigest()
    for i in order:
        offset, chunk = everything[i]
        digest.add(offset, memoryview(chunk))
    assert digest.hexdigest(len(data)) == hashlib.sha256(data).hexdigest()
    with pytest.raises(AssertionError, match="hashed 100000 of 100001 bytes"):
        digest.hexdigest(len(data) + 1)


@pytest.mark.parametrize("bulk", [True, False])
def test_a_crc32c_from_the_manifest_is_what_the_download_checks(
    location: Location, tmp_path: Path, bulk: bool
) -> None:
    """With a shard's CRC-32C the download checks it (not the SHA-256, here wrong on purpose);
    bytes that do not match it are refused, naming both values."""
    crc = google_crc32c.value(DATA)
    transfer = Transfer(part_bytes=PART, threads=3, bulk=bulk)
    location.download(
        KEY, tmp_path / "a", Expected(size=len(DATA), sha256="0" * 64, crc32c=crc), transfer
    )
    assert (tmp_path / "a").read_bytes() == DATA
    wrong = crc ^ 1
    with pytest.raises(
        ChecksumMismatchError,
        match=rf"{location.url}/{KEY}: crc32c of its {len(DATA)} bytes is {crc:08x}, the "
        rf"manifest records {wrong:08x} \(3 downloads\)",
    ):
        location.download(
            KEY, tmp_path / "b", Expected(size=len(DATA), sha256=SHA256, crc32c=wrong), transfer
        )
    assert not (tmp_path / "b").exists()
