"""Appends to a dataset in a real S3 store (SeaweedFS on 127.0.0.1): the objects are the bytes
of the same appends to a local dataset; the lock object is created by a conditional put."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastpack.compiler import AppendLockedError, BuildOptions, append, build
from fastpack.compiler.append import publish_store
from fastpack.compiler.append.lock import ObjectLock
from fastpack.storage import Location

from tests.compiler._helpers import QUIET, tree_bytes
from tests.compiler.append._datasets import image_folder
from tests.compiler.targets.test_store_build import store_bytes
from tests.s3_server import S3Server


def _stamp(info: dict[str, object]) -> tuple[object, object]:
    """What changes when an object is written again: its ETag and its modification time."""
    return info["ETag"], info["LastModified"]


def test_appends_to_a_dataset_in_the_store(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    first = image_folder(tmp_path / "a", {"cat": 4, "dog": 3})
    second = image_folder(tmp_path / "b", {"dog": 2, "eel": 3}, seed=1)
    third = image_folder(tmp_path / "c", {"ant": 2}, seed=2)
    (second / "eel" / "broken.jpg").write_bytes(b"not a jpeg")
    options = BuildOptions(workers=1, shard_size=4000, max_side=48, **QUIET)
    local, url = tmp_path / "local", f"s3://{s3_bucket}/ds"
    store = s3_server.storage_options
    build(first, local, options)
    build(first, url, options, staging=tmp_path / "staging", storage_options=store)
    fs = s3_server.filesystem()
    before = {p: _stamp(fs.info(p)) for p in fs.find(f"{s3_bucket}/ds")}
    for source in (second, third):
        append(local, source, BuildOptions(workers=1, **QUIET))
        summary = append(url, source, BuildOptions(workers=2, **QUIET), storage_options=store)
    assert summary.version == 3
    assert store_bytes(s3_server, url) == tree_bytes(local)
    fs.invalidate_cache()
    after = {p: _stamp(fs.info(p)) for p in fs.find(f"{s3_bucket}/ds")}
    assert {p: after[p] for p in before if not p.endswith("/fastpack.json")} == {
        p: e for p, e in before.items() if not p.endswith("/fastpack.json")
    }  # no object of version 1 written again


def test_the_lock_object(s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    location = Location(f"s3://{s3_bucket}/ds", s3_server.storage_options)
    lock = ObjectLock(location)
    assert lock.acquire(2, resume=False) is None
    held = json.loads(location.read_bytes("append.lock"))
    assert held["version"] == 2
    with pytest.raises(
        AppendLockedError,
        match=rf"ds/append\.lock: another append \(of version 2\) holds this dataset: host "
        rf"{held['host']}, pid {held['pid']}, since {held['started']}; wait for it to end",
    ):
        ObjectLock(location).acquire(2, resume=True)
    assert lock.conditional  # SeaweedFS answers If-None-Match with 412
    lock.release()
    assert location.size("append.lock") is None
    source = image_folder(tmp_path / "a", {"cat": 2})
    url = f"s3://{s3_bucket}/ds2"
    options = BuildOptions(workers=1, **QUIET)
    build(source, url, options, staging=tmp_path / "s", storage_options=s3_server.storage_options)
    other = Location(url, s3_server.storage_options)
    other.fs.pipe_file(other.path("append.lock"), json.dumps(held).encode())
    with pytest.raises(AppendLockedError, match=r"ds2/append\.lock: another append"):
        append(url, source, options, storage_options=s3_server.storage_options)


def test_an_append_to_the_store_stopped_while_publishing_resumes(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = image_folder(tmp_path / "a", {"cat": 4, "dog": 3})
    second = image_folder(tmp_path / "b", {"eel": 4}, seed=1)
    options = BuildOptions(workers=1, shard_size=4000, max_side=48, **QUIET)
    local, url = tmp_path / "local", f"s3://{s3_bucket}/ds"
    store = s3_server.storage_options
    build(first, local, options)
    append(local, second, BuildOptions(workers=1, **QUIET))
    build(first, url, options, staging=tmp_path / "staging", storage_options=store)
    staging = tmp_path / "append-staging"

    def stop(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    options = BuildOptions(workers=1, **QUIET)
    monkeypatch.setattr(publish_store, "write_version", stop)  # after the shards' uploads
    with pytest.raises(OSError, match="No space left"):
        append(
            url, second, BuildOptions(workers=1, **QUIET), staging=staging, storage_options=store
        )
    monkeypatch.undo()
    assert json.loads(Location(url, store).read_bytes("fastpack.json"))["version"] == 1
    summary = append(
        url, second, BuildOptions(workers=1, resume=True, **QUIET), staging=staging,
        storage_options=store,
    )  # fmt: skip
    assert summary.version == 2
    assert store_bytes(s3_server, url) == tree_bytes(local)
    assert not staging.exists()
