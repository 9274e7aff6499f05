"""Datasets in a real S3 server (SeaweedFS on 127.0.0.1): building to a bucket, streaming from
it across ranks and workers, a bounded cache, an outage mid-epoch, and the failures."""

from __future__ import annotations

import logging
import multiprocessing
import os
import re
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.compiler import BuildError, BuildOptions, build
from fastpack.compiler.build_dir import BUILD_DIR, default_staging_dir
from fastpack.formats import (
    INDEX_NAME,
    MANIFEST_NAME,
    ChecksumMismatchError,
    DatasetNotFoundError,
    Index,
    read_manifest,
)
from fastpack.reader import verify_dataset
from fastpack.reader.remote.datasets import fetch_dataset, read_manifest_at, read_remote_manifest
from fastpack.reader.streaming.cache import ShardCache
from fastpack.reader.streaming.dataset import StreamingDataset
from fastpack.reader.streaming.sources import FetchOptions
from fastpack.reader.verify.remote import verify_remote
from fastpack.storage import FetchError, Location
from fastpack.storage.object_reads import ObstoreS3Reads
from fastpack.storage.retry import RetryPolicy
from fastpack.storage.urls import filesystem
from torch.utils.data import DataLoader

from tests.publish import publish_dataset
from tests.reader.streaming._streaming_data import build_small, counts, indices, sample_of_image
from tests.s3_server import S3Server

QUICK = FetchOptions(retry=RetryPolicy(attempts=2, backoff_s=0.05))


@pytest.fixture
def built(make_image_folder: Callable[..., Path], tmp_path: Path) -> Path:
    """120 samples in about 30 shards."""
    return build_small(make_image_folder(classes=4, per_class=30, size=40), tmp_path / "ds")


def _publish(built: Path, s3_server: S3Server, bucket: str, tmp_path: Path) -> str:
    url = f"s3://{bucket}/ds"
    publish_dataset(built, url, s3_server.storage_options)
    return url


def test_build_to_bucket_then_stream_two_ranks_two_workers(
    make_image_folder: Callable[..., Path], s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    source = make_image_folder(classes=4, per_class=25, size=40)
    url = f"s3://{s3_bucket}/imagenet-tiny"
    options = BuildOptions(workers=2, shard_size=16_000, progress=False)
    staging = tmp_path / "staging"
    build(
        source,
        url,
        options,
        staging=staging,
        storage_options=s3_server.storage_options,
        keep_staging=True,
    )
    local = read_manifest(staging / MANIFEST_NAME)
    assert read_remote_manifest(url, s3_server.storage_options) == local
    assert len(local.shards) > 8
    by_digest = sample_of_image(staging)
    seen: list[int] = []
    for rank in range(2):
        dataset = StreamingDataset(
            url,
            rank=rank,
            world_size=2,
            shuffle_window=2,
            cache_dir=tmp_path / "cache",
            storage_options=s3_server.storage_options,
            fetch=FetchOptions(part_bytes=4096),
        )
        loader = DataLoader(dataset, batch_size=None, num_workers=2)
        rank_ids = indices((image.numpy() for image, _ in loader), by_digest)
        assert len(rank_ids) == 50
        seen += rank_ids
    assert (counts(seen, 100) == 1).all()


def test_a_failed_build_leaves_no_dataset_behind(
    make_image_folder: Callable[..., Path], s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    source = make_image_folder(classes=2, per_class=20, size=40)
    (source / "class_01" / "img_0007.jpg").write_bytes(b"not an image")
    url = f"s3://{s3_bucket}/broken"
    options = BuildOptions(workers=1, shard_size=8_000, strict=True, progress=False)
    with pytest.raises(BuildError):
        build(
            source,
            url,
            options,
            staging=tmp_path / "staging",
            storage_options=s3_server.storage_options,
        )
    assert (tmp_path / "staging" / BUILD_DIR).is_dir()  # kept for a resume
    fs = s3_server.filesystem()
    assert fs.ls(f"{s3_bucket}/broken/shards")  # the shards finished before the reject
    assert not fs.exists(f"{s3_bucket}/broken/{MANIFEST_NAME}")
    with pytest.raises(DatasetNotFoundError, match=r"broken/fastpack.json: no manifest"):
        read_remote_manifest(url, s3_server.storage_options)


def test_resume_uploads_only_what_is_missing(
    make_image_folder: Callable[..., Path], s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    """A strict build stopped by a reject leaves its finished shards in the store; the resumed
    build (not strict: the input is a reject) uploads the rest, and none of those again."""
    source = make_image_folder(classes=4, per_class=30, size=40)
    (source / "class_03" / "img_0029.jpg").write_bytes(b"not an image")  # last in the plan
    url = f"s3://{s3_bucket}/ds"
    store, staging = s3_server.storage_options, tmp_path / "staging"
    strict = BuildOptions(workers=1, shard_size=16_000, strict=True, progress=False)
    with pytest.raises(BuildError, match=r"img_0029\.jpg"):
        build(source, url, strict, staging=staging, storage_options=store)
    fs = s3_server.filesystem()
    assert not fs.exists(f"{s3_bucket}/ds/{MANIFEST_NAME}")
    stamps = {path: fs.info(path)["LastModified"] for path in fs.find(f"{s3_bucket}/ds/shards")}
    assert len(stamps) >= 10  # an upload cut short: some shards, no manifest
    time.sleep(1.1)
    resumed = BuildOptions(workers=1, shard_size=16_000, resume=True, progress=False)
    summary = build(source, url, resumed, staging=staging, storage_options=store)
    assert summary.rejected == 1
    for path, stamp in stamps.items():
        assert fs.info(path, refresh=True)["LastModified"] == stamp
    assert len(fs.find(f"{s3_bucket}/ds/shards")) > len(stamps)
    report = verify_dataset(fetch_dataset(url, tmp_path / "copy", store))
    assert report.ok, report.format()
    again = BuildOptions(workers=1, shard_size=16_000, progress=False)
    with pytest.raises(BuildError, match="already holds a fastpack dataset"):
        build(source, url, again, staging=tmp_path / "again", storage_options=store)


def test_build_to_url_by_default_stages_in_the_cache_and_cleans_up(
    make_image_folder: Callable[..., Path],
    s3_server: S3Server,
    s3_bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FASTPACK_CACHE_DIR", str(tmp_path / "cache"))
    url = f"s3://{s3_bucket}/ds"
    staging = default_staging_dir(url)
    assert staging.is_relative_to(tmp_path / "cache")
    options = BuildOptions(workers=1, shard_size=16_000, progress=False)
    source = make_image_folder(classes=2, per_class=10, size=40)
    summary = build(source, url, options, storage_options=s3_server.storage_options)
    assert not staging.exists()
    assert read_remote_manifest(url, s3_server.storage_options).num_samples == summary.samples
    assert verify_remote(url, s3_server.storage_options, decode=True).ok


def test_verify_remote_reports_a_damaged_shard_by_its_url(
    built: Path, s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    url = _publish(built, s3_server, s3_bucket, tmp_path)
    index = Index(built / INDEX_NAME)
    row = int(np.flatnonzero(index.shard == 4)[1])
    offset, size = int(index.offsets("jpg")[row]), int(index.sizes("jpg")[row])
    fs = s3_server.filesystem()
    key = f"{s3_bucket}/ds/shards/000004.tar"
    data = bytearray(fs.cat_file(key))
    data[offset + size // 2] ^= 0xFF
    fs.pipe(key, bytes(data))
    fs.rm(f"{s3_bucket}/ds/shards/000005.tar")
    report = verify_remote(url, s3_server.storage_options, chunk_bytes=1000)
    shard = f"{url}/shards/000004.tar"
    assert len(report.problems) == 3, report.format()
    assert re.fullmatch(
        rf"{shard}: sha256 [0-9a-f]{{64}}, the manifest records [0-9a-f]{{64}}", report.problems[0]
    )
    assert re.fullmatch(
        rf"{shard}: sample {row} \(key {index.key(row)}\) field 'jpg': crc32 [0-9a-f]{{8}}, "
        rf"the index records {int(index.crc32('jpg')[row]):08x}",
        report.problems[1],
    )
    assert report.problems[2] == f"{url}/shards/000005.tar: not found"
    manifest = read_manifest(built / MANIFEST_NAME)
    assert report.shards_checked == len(manifest.shards) - 1
    assert report.samples_checked == 120 - manifest.shards[5].samples
    missing = verify_remote(f"s3://{s3_bucket}/nothing-here", s3_server.storage_options)
    assert "nothing-here/fastpack.json: no manifest" in "\n".join(missing.problems)


def test_verify_remote_streams_shards_and_writes_none_to_disk(
    built: Path,
    s3_server: S3Server,
    s3_bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = _publish(built, s3_server, s3_bucket, tmp_path)
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    reads: list[tuple[str, int, int]] = []
    on_disk: set[str] = set()
    read_range = Location.read_range

    def spy(self: Location, name: str, start: int, end: int) -> bytes:
        reads.append((name, start, end))
        on_disk.update(p.name for p in temp.rglob("*") if p.is_file())
        return read_range(self, name, start, end)

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("verify_remote copied a whole object")

    monkeypatch.setattr(Location, "read_range", spy)
    monkeypatch.setattr(Location, "download", refuse)
    fs = filesystem(url, s3_server.storage_options)[0]
    for method in ("get_file", "get", "open"):
        monkeypatch.setattr(fs, method, refuse)
    report = verify_remote(url, s3_server.storage_options, decode=True, chunk_bytes=1000)
    manifest = read_manifest(built / MANIFEST_NAME)
    assert report.ok, report.format()
    assert (report.shards_checked, report.samples_checked) == (len(manifest.shards), 120)
    assert max(end - start for _, start, end in reads) <= 1000
    for shard in manifest.shards:  # each shard read once, front to back, in chunks
        spans = [(start, end) for name, start, end in reads if name == shard.name]
        assert spans == [(a, min(a + 1000, shard.bytes)) for a in range(0, shard.bytes, 1000)]
    assert on_disk  # the spy looked while the shards were read...
    assert on_disk == {MANIFEST_NAME, INDEX_NAME}  # ...and saw no shard
    assert not list(temp.iterdir())


def test_cache_limit_below_the_dataset_evicts_and_stays_bounded(
    built: Path, s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    url = _publish(built, s3_server, s3_bucket, tmp_path)
    manifest = read_manifest(built / MANIFEST_NAME)
    largest = max(s.bytes for s in manifest.shards)
    limit = 2 * 3 * largest  # two workers, each holding a window of 2 shards + 1 prefetched
    assert limit < sum(s.bytes for s in manifest.shards) / 3
    dataset = StreamingDataset(
        url,
        shuffle_window=2,
        prefetch=1,
        cache_limit=limit,
        cache_dir=tmp_path / "cache",
        storage_options=s3_server.storage_options,
    )
    cache = ShardCache(dataset.root, limit)
    peak, done = [0], threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], cache.usage())
            time.sleep(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    by_digest = sample_of_image(built)
    try:
        seen = [image.numpy() for image, _ in DataLoader(dataset, batch_size=None, num_workers=2)]
    finally:
        done.set()
        watcher.join()
    assert (counts(indices(seen, by_digest), 120) == 1).all()
    assert 0 < peak[0] <= limit
    assert cache.usage() <= limit
    assert len(list((dataset.root / "shards").glob("*.tar"))) < len(manifest.shards)


def test_server_outage_mid_epoch_loses_and_repeats_nothing(
    built: Path,
    s3_server: S3Server,
    s3_bucket: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = _publish(built, s3_server, s3_bucket, tmp_path)
    # patient enough for a restarted server whose volumes register again slowly: on a busy
    # 2-core machine its reads of existing objects fail (500) for over 10 s after it answers
    patient = FetchOptions(
        threads=1, retry=RetryPolicy(attempts=30, backoff_s=0.2, max_backoff_s=2)
    )
    dataset = StreamingDataset(
        url,
        shuffle_window=2,
        prefetch=1,
        cache_dir=tmp_path / "cache",
        storage_options=s3_server.storage_options,
        fetch=patient,
    )
    by_digest = sample_of_image(built)
    images = []

    def restart_server() -> None:
        time.sleep(1.0)
        s3_server.start()

    restart = threading.Thread(target=restart_server)
    with caplog.at_level(logging.WARNING, logger="fastpack.storage"):
        for image, _ in dataset:
            images.append(image)
            if len(images) == 10:
                s3_server.stop()
                restart.start()
        restart.join()
    assert (counts(indices(images, by_digest), 120) == 1).all()
    assert any("retrying" in r.getMessage() for r in caplog.records)


def test_corrupted_object_raises_a_checksum_error(
    built: Path, s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    url = _publish(built, s3_server, s3_bucket, tmp_path)
    fs = s3_server.filesystem()
    key = f"{s3_bucket}/ds/shards/000002.tar"
    data = bytearray(fs.cat_file(key))
    data[600] ^= 0xFF  # one byte inside the first image, same size
    fs.pipe(key, bytes(data))
    dataset = StreamingDataset(
        url,
        shuffle=False,
        cache_dir=tmp_path / "cache",
        storage_options=s3_server.storage_options,
        fetch=QUICK,
    )
    with pytest.raises(
        ChecksumMismatchError, match=r"shards/000002\.tar: crc32c .* manifest records"
    ):
        list(dataset)
    assert not list((dataset.root / "shards").glob("000002.tar*"))


def test_missing_shard_raises_naming_it_at_once(
    built: Path, s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    url = _publish(built, s3_server, s3_bucket, tmp_path)
    s3_server.filesystem().rm(f"{s3_bucket}/ds/shards/000003.tar")
    dataset = StreamingDataset(
        url,
        shuffle=False,
        cache_dir=tmp_path / "cache",
        storage_options=s3_server.storage_options,
        fetch=QUICK,
    )
    with pytest.raises(DatasetNotFoundError, match=r"ds/shards/000003\.tar: not found"):
        list(dataset)  # a missing object is not retried


def test_truncated_object_raises_after_the_retries(
    built: Path, s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    url = _publish(built, s3_server, s3_bucket, tmp_path)
    fs = s3_server.filesystem()
    key = f"{s3_bucket}/ds/shards/000001.tar"
    fs.pipe(key, fs.cat_file(key)[:3000])
    dataset = StreamingDataset(
        url,
        shuffle=False,
        cache_dir=tmp_path / "cache",
        storage_options=s3_server.storage_options,
        fetch=QUICK,
    )
    with pytest.raises(FetchError, match=r"000001\.tar: unavailable .* came back as 3000 bytes"):
        list(dataset)


def test_unknown_bucket_is_a_clear_error(s3_server: S3Server, tmp_path: Path) -> None:
    url = "s3://no-such-bucket-here/ds"
    with pytest.raises(
        DatasetNotFoundError,
        match=r"no-such-bucket-here/ds/fastpack.json: no "
        r"manifest.*bucket does not exist",
    ):
        StreamingDataset(url, cache_dir=tmp_path, storage_options=s3_server.storage_options)


def test_credentials_and_endpoint_from_the_environment(
    built: Path, s3_env: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    url = _publish(built, s3_env, s3_bucket, tmp_path)
    assert read_manifest_at(url) == read_manifest(built / MANIFEST_NAME)
    dataset = StreamingDataset(url, cache_dir=tmp_path / "cache", world_size=4, rank=3)
    assert sum(1 for _ in dataset) == len(dataset) == 30


def test_cache_limit_below_one_stream_is_refused(
    built: Path, s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    url = _publish(built, s3_server, s3_bucket, tmp_path)
    with pytest.raises(ValueError, match=r"cache_limit=1000 bytes is below one stream's working"):
        StreamingDataset(
            url,
            cache_limit=1000,
            cache_dir=tmp_path / "cache",
            storage_options=s3_server.storage_options,
        )


def _stream_in_a_clean_process(
    url: str, options: dict[str, object], cache: Path, log: Path, answer: Any
) -> None:
    """Run in a spawned process (whose ancestors never ran obstore): an epoch through two forked
    workers; every obstore read appends its process id to `log`. Puts the samples seen."""

    chunks = ObstoreS3Reads.chunks

    def logged(self: ObstoreS3Reads, path: str, start: int, end: int) -> Any:
        with log.open("a") as out:
            out.write(f"{os.getpid()}\n")
        return chunks(self, path, start, end)

    ObstoreS3Reads.chunks = logged  # type: ignore[method-assign]
    dataset = StreamingDataset(url, cache_dir=cache, storage_options=options)
    loader = DataLoader(dataset, batch_size=None, num_workers=2, multiprocessing_context="fork")
    seen = sum(1 for _ in loader)
    if log.exists() and str(os.getpid()) in log.read_text().split():
        raise AssertionError("the trainer itself ran obstore")
    answer.put(seen)


def test_workers_fetch_shards_through_obstore_when_the_trainer_never_ran_it(
    built: Path, s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    """The trainer reads the manifest and index through s3fs, so that its forked workers may
    run obstore (whose runtime would not survive the fork); each worker does."""
    url = _publish(built, s3_server, s3_bucket, tmp_path)
    log = tmp_path / "obstore-pids"
    context = multiprocessing.get_context("spawn")
    answer = context.SimpleQueue()
    args = (url, s3_server.storage_options, tmp_path / "cache", log, answer)
    process = context.Process(target=_stream_in_a_clean_process, args=args)
    process.start()
    process.join(120)
    assert process.exitcode == 0
    assert answer.get() == read_manifest(built / MANIFEST_NAME).num_samples
    assert len(set(log.read_text().split())) == 2  # both workers, and only they
