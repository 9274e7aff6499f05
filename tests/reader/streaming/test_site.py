"""`locate` alone: where a dataset's bytes are, resolved once (a local directory, a mount read in
place or copied into the node's cache, a URL fetched into it)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from fastpack.formats import MANIFEST_NAME, read_manifest
from fastpack.reader.streaming import site as site_module
from fastpack.reader.streaming.options import StreamingOptions
from fastpack.reader.streaming.origins import MountOrigin, UrlOrigin
from fastpack.reader.streaming.site import locate

from tests.publish import publish_dataset
from tests.reader.conftest import Built
from tests.s3_server import S3Server


@pytest.fixture
def built(build_dataset: Callable[..., Built]) -> Path:
    return build_dataset(classes=2, per_class=3, size=24).path


def test_a_local_directory_is_read_in_place(built: Path, tmp_path: Path) -> None:
    site = locate(built, StreamingOptions(cache_dir=tmp_path / "cache"))
    assert (site.path, site.root, site.mount, site.cached) == (str(built), built, False, None)
    assert site.manifest == read_manifest(built / MANIFEST_NAME)
    assert site.io == "mmap"
    assert not (tmp_path / "cache").exists()  # a cache_dir for a local disk is not used
    assert locate(str(built), StreamingOptions(io="pread")).io == "pread"
    site.close()  # nothing opened: nothing to close


def test_a_mount_with_a_cache_dir_is_copied_into_the_cache(
    built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(site_module, "on_remote_file_system", lambda path: True)
    in_place = locate(built, StreamingOptions())
    assert in_place.mount
    assert in_place.cached is None
    text = (built / MANIFEST_NAME).read_bytes()
    key = hashlib.sha256(os.path.realpath(built).encode() + b"\n" + text).hexdigest()[:16]
    stale = tmp_path / "cache" / key / "shards" / f".000000.tar.{2**22 + 1}.1.part"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"left by a process that ended")
    site = locate(built, StreamingOptions(cache_dir=tmp_path / "cache"))
    assert site.cached is not None
    assert isinstance(site.cached.origin, MountOrigin)
    assert site.cached.origin.root == built
    assert site.cached.root == tmp_path / "cache" / key  # named after the real path and manifest
    assert site.root == built  # the manifest and the index are read on the mount
    assert site.cached.index_rows is None
    assert not stale.exists()


def test_a_url_is_fetched_into_a_directory_named_after_it(
    built: Path, s3_server: S3Server, s3_bucket: str, tmp_path: Path
) -> None:
    url = f"s3://{s3_bucket}/ds"
    publish_dataset(built, url, s3_server.storage_options)
    options = StreamingOptions(
        cache_dir=tmp_path / "cache", storage_options=s3_server.storage_options
    )
    site = locate(url, options)
    text = (built / MANIFEST_NAME).read_bytes()
    key = hashlib.sha256(url.encode() + b"\n" + text).hexdigest()[:16]
    assert site.path == url
    assert site.root == tmp_path / "cache" / key
    assert (site.root / MANIFEST_NAME).read_bytes() == text
    assert site.manifest == read_manifest(built / MANIFEST_NAME)
    assert not site.mount
    assert site.cached is not None
    assert site.cached.root == site.root
    assert isinstance(site.cached.origin, UrlOrigin)
    assert site.cached.index_rows is not None
    assert site.io == "mmap"
    assert not list(site.root.glob("shards/*"))  # the shards come when a stream reads them
    site.close()
