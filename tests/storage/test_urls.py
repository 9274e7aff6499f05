"""URLs, the per-process filesystems behind them, and the cache directory."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fastpack.storage import CACHE_ENV, default_cache_dir, is_url, urls
from fastpack.storage.urls import filesystem

S3_OPTIONS = {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": "http://127.0.0.1:9"}}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("s3://bucket/ds", True),
        ("memory://bucket/ds", True),
        ("gs://bucket", True),
        ("file:///data/ds", False),
        ("/data/ds", False),
        ("relative/ds", False),
        (Path("/data/ds"), False),
    ],
)
def test_is_url(path: str | Path, expected: bool) -> None:
    assert is_url(path) is expected


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("s3://bucket/pre/fix", "bucket/pre/fix"),
        ("s3://bucket/pre/fix/", "bucket/pre/fix"),
        ("s3://bucket", "bucket"),
        ("memory://bucket/ds/", "/bucket/ds"),
    ],
)
def test_filesystem_strips_the_scheme_and_trailing_slash(url: str, path: str) -> None:
    options = S3_OPTIONS if url.startswith("s3://") else {}
    fs, found = filesystem(url, options)
    assert found == path
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    assert url.split("://", maxsplit=1)[0] in protocols


def test_one_filesystem_per_process_and_options(monkeypatch: pytest.MonkeyPatch) -> None:
    fs, _ = filesystem("s3://one/ds", S3_OPTIONS)
    assert filesystem("s3://two/other/", dict(S3_OPTIONS))[0] is fs  # any bucket, same options
    assert fs.key == "k"
    other, _ = filesystem("s3://one/ds", {**S3_OPTIONS, "key": "k2"})
    assert other is not fs
    assert other.key == "k2"
    child = os.getpid() + 1
    with monkeypatch.context() as m:  # as in a forked child: never the parent's filesystem
        m.setattr(os, "getpid", lambda: child)  # the `os` module that storage/urls.py calls
        assert filesystem("s3://one/ds", S3_OPTIONS)[0] is not fs


def test_default_cache_dir_honours_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    assert default_cache_dir() == tmp_path / "cache"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv(CACHE_ENV, "")
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "fastpack"
    monkeypatch.delenv(CACHE_ENV)
    assert default_cache_dir() == tmp_path / "home" / ".cache" / "fastpack"


def test_forked_processes_make_s3_clients_from_the_parents_botocore_session() -> None:
    options = {"key": "k", "secret": "s", "client_kwargs": {"endpoint_url": "http://127.0.0.1:9"}}
    parent, _ = urls.filesystem("s3://bucket/ds", options)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        child, _ = urls.filesystem("s3://bucket/ds", options)
        os.write(write, b"%d %d" % (child is parent, child.session is parent.session))
        os._exit(0)
    os.waitpid(pid, 0)
    os.close(write)
    assert os.read(read, 16) == b"0 1"  # a filesystem of its own, the loaded session shared
