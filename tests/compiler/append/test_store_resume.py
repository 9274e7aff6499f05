"""Appends to a dataset in a real S3 store (SeaweedFS on 127.0.0.1): one killed (SIGKILL)
during its staged build resumes to the objects of an uninterrupted append, and one that skips
duplicates reads the stored members it compares from the store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from fastpack.compiler import BuildOptions, append, build
from fastpack.storage import Location

from tests.compiler._helpers import QUIET, tree_bytes
from tests.compiler.append._datasets import image_folder, samples, write_folder
from tests.compiler.targets.test_store_build import store_bytes
from tests.compiler.test_resume import big_folder, group_gone, wait_for
from tests.conftest import jpeg_bytes
from tests.s3_server import S3Server

SHAPING = BuildOptions(workers=1, shard_size=4000, max_side=48, **QUIET)


def _both(tmp_path: Path, s3_server: S3Server, bucket: str) -> tuple[Path, str]:
    """The same dataset of 7 images built in a directory and at a URL."""
    first = image_folder(tmp_path / "a", {"cat": 4, "dog": 3})
    local, url = tmp_path / "local", f"s3://{bucket}/ds"
    build(first, local, SHAPING)
    build(
        first, url, SHAPING, staging=tmp_path / "staging", storage_options=s3_server.storage_options
    )
    return local, url


def test_an_append_to_the_store_killed_while_staging_resumes(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    local, url = _both(tmp_path, s3_server, s3_bucket)
    store = s3_server.storage_options
    source = big_folder(tmp_path / "many", 200)  # 240x320 images, one per 4 kB shard
    staging = tmp_path / "append-staging"
    script = (
        "import json, sys; from fastpack.compiler import BuildOptions, append; "
        "append(sys.argv[1], sys.argv[2], BuildOptions(workers=2, progress=False), "
        "staging=sys.argv[3], storage_options=json.loads(sys.argv[4]))"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script, url, str(source), str(staging), json.dumps(store)],
        start_new_session=True,
    )
    wait_for(lambda: len(list((staging / "shards").glob("*.tar"))) >= 5, 60, "staged shards")
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    wait_for(lambda: group_gone(process.pid), 10, "orphaned workers to exit")
    location = Location(url, store)
    assert json.loads(location.read_bytes("fastpack.json"))["version"] == 1
    assert location.size("append.lock") is not None

    resumed = append(
        url, source, BuildOptions(workers=2, resume=True, **QUIET), staging=staging,
        storage_options=store,
    )  # fmt: skip
    assert resumed.notes[0].startswith("took over the lock of a gone append")
    append(local, source, BuildOptions(workers=2, **QUIET))
    assert store_bytes(s3_server, url) == tree_bytes(local)
    assert location.size("append.lock") is None
    assert not staging.exists()


def test_duplicates_of_members_in_the_store(
    tmp_path: Path, s3_server: S3Server, s3_bucket: str
) -> None:
    local, url = _both(tmp_path, s3_server, s3_bucket)
    inputs = {p.read_bytes() for p in (tmp_path / "a").rglob("*.jpg")}
    stored = [s for s in samples(local) if s[3] in inputs]  # kept byte for byte
    source = tmp_path / "new"
    files = {
        "cat/copy.jpg": stored[0][3],
        "eel/twin_1.jpg": jpeg_bytes(30, 36, seed=501),
        "eel/twin_2.jpg": jpeg_bytes(30, 36, seed=501),
        "eel/fresh.jpg": jpeg_bytes(28, 30, seed=502),
    }
    write_folder(source, files)
    options = BuildOptions(workers=2, **QUIET)
    mine = append(local, source, options, skip_duplicates=True)
    theirs = append(
        url, source, options, storage_options=s3_server.storage_options, skip_duplicates=True
    )
    assert theirs.duplicates == mine.duplicates == 2
    assert ("cat/copy.jpg", stored[0][0]) in theirs.duplicate_lines
    assert store_bytes(s3_server, url) == tree_bytes(local)
