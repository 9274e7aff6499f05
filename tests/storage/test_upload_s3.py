"""Uploads to a real S3 server (SeaweedFS on 127.0.0.1) are retried as downloads are: a build
whose first uploads fail still publishes a dataset that reads back whole, and the `retry` of
`build()` into a URL decides how many attempts an upload gets."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastpack.compiler import BuildOptions, build
from fastpack.formats import MANIFEST_NAME, read_manifest
from fastpack.reader import Dataset, fetch_dataset, verify_dataset, verify_remote
from fastpack.storage import FetchError, RetryPolicy
from fastpack.storage.urls import filesystem

from tests.s3_server import S3Server

from ._flaky import Flaky

OPTIONS = BuildOptions(workers=1, shard_size=16_000, progress=False)


def flaky_fs(
    monkeypatch: pytest.MonkeyPatch, s3_server: S3Server, url: str, method: str, failures: int
) -> Flaky:
    """Make `<method>` of the filesystem that this process uses for `url` fail its first
    `failures` calls."""
    fs: Any = filesystem(url, s3_server.storage_options)[0]
    wrapper = Flaky(getattr(fs, method), failures)
    monkeypatch.setattr(fs, method, wrapper)
    return wrapper


def test_a_build_whose_first_uploads_fail_still_publishes(
    make_image_folder: Callable[..., Path],
    s3_server: S3Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    url = f"s3://{s3_server.new_bucket()}/ds"
    put = flaky_fs(monkeypatch, s3_server, url, "put_file", 2)
    info = flaky_fs(monkeypatch, s3_server, url, "info", 1)  # the look for an existing dataset
    source = make_image_folder(classes=3, per_class=12, size=40)
    with caplog.at_level(logging.WARNING, logger="fastpack.storage"):
        summary = build(
            source,
            url,
            OPTIONS,
            staging=tmp_path / "staging",
            keep_staging=True,
            storage_options=s3_server.storage_options,
            retry=RetryPolicy(attempts=3, backoff_s=0.01),
        )
    manifest = read_manifest(tmp_path / "staging" / MANIFEST_NAME)
    # per shard its tar, idx, index part and record (the record last: the shard is finished at
    # the store); the build's options; the index and manifest (no rejects)
    objects = 4 * len(manifest.shards) + 3
    assert len(manifest.shards) > 2
    assert (put.failed, put.calls) == (2, objects + 2)
    assert (info.failed, info.calls) == (1, 3)  # the looks for a dataset and for the options
    assert sum("retrying" in r.getMessage() for r in caplog.records) == 3
    remote = verify_remote(url, s3_server.storage_options, decode=True)
    assert remote.ok, remote.format()
    assert remote.samples_checked == summary.samples == 36
    copy = fetch_dataset(url, tmp_path / "copy", s3_server.storage_options)
    assert verify_dataset(copy).ok
    dataset = Dataset(copy)
    assert len(dataset) == 36
    assert sorted(int(dataset[i][1]) for i in range(36)) == [c for c in range(3) for _ in range(12)]


def test_build_to_url_gives_up_after_its_retry_attempts(
    make_image_folder: Callable[..., Path],
    s3_server: S3Server,
    s3_bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = f"s3://{s3_bucket}/ds"
    put = flaky_fs(monkeypatch, s3_server, url, "put_file", 100)
    source = make_image_folder(classes=2, per_class=8, size=40)
    target = re.escape(url) + r"/\.fastpack-build/options\.json"  # the build's first upload
    last = "ConnectionError: injected failure 2 of 100"
    message = rf"^upload of .* to {target}: unavailable after 2 attempts; last error: {last}$"
    with pytest.raises(FetchError, match=message):
        build(
            source,
            url,
            OPTIONS,
            staging=tmp_path / "staging",
            storage_options=s3_server.storage_options,
            retry=RetryPolicy(attempts=2, backoff_s=0.01),
        )
    assert put.calls == 2
    assert not s3_server.filesystem().exists(f"{s3_bucket}/ds/{MANIFEST_NAME}")
