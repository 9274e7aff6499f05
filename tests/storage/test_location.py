"""`Location` on fsspec's in-memory filesystem (`memory://`) whose calls fail on purpose: uploads
and reads are retried through the one `RetryPolicy`, a missing object is not, and the last
failure is a `FetchError` naming the URL. Listing and removal also run on a real S3 server
(SeaweedFS): pages of a listing are retried one by one."""

from __future__ import annotations

import hashlib
import logging
import pickle
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastpack.formats import DatasetNotFoundError
from fastpack.storage import Expected, FetchError, Location, RetryPolicy, Transfer, listing

from tests.s3_server import S3Server

from ._flaky import Flaky

QUICK = RetryPolicy(attempts=3, backoff_s=0.0)
DATA = bytes(range(256)) * 40  # 10240 bytes


@pytest.fixture
def location() -> Iterator[Location]:
    """A `Location` at a fresh prefix of the in-memory filesystem, holding `obj` (`DATA`)."""
    location = Location(f"memory://fastpack-{uuid.uuid4().hex[:12]}/ds", retry=QUICK)
    location.fs.pipe_file(location.path("obj"), DATA)
    yield location
    location.fs.rm(location.path(""), recursive=True)


def flaky(monkeypatch: pytest.MonkeyPatch, location: Location, method: str, failures: int) -> Flaky:
    """Make `location.fs.<method>` fail its first `failures` calls."""
    wrapper = Flaky(getattr(location.fs, method), failures)
    monkeypatch.setattr(location.fs, method, wrapper)
    return wrapper


def test_upload_is_retried_until_it_goes_through(
    location: Location,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    put = flaky(monkeypatch, location, "put_file", 2)
    local = tmp_path / "000000.tar"
    local.write_bytes(DATA[::-1])
    with caplog.at_level(logging.WARNING, logger="fastpack.storage"):
        location.upload(local, "shards/000000.tar")
    assert (put.calls, put.failed) == (3, 2)
    assert location.fs.cat_file(location.path("shards/000000.tar")) == DATA[::-1]
    retries = [r.getMessage() for r in caplog.records]
    assert len(retries) == 2
    assert all(
        m.startswith(f"upload of {local} to {location.url}/shards/000000.tar: ConnectionError")
        for m in retries
    ), retries


def test_reads_are_retried_until_they_go_through(
    location: Location, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = flaky(monkeypatch, location, "cat_file", 2)
    assert location.read_range("obj", 100, 300) == DATA[100:300]
    assert (cat.calls, cat.failed) == (3, 2)
    cat.failures += 2
    assert location.read_bytes("obj") == DATA
    assert cat.calls == 6
    cat.failures += 1
    chunks = list(location.iter_chunks("obj", len(DATA), 4000))
    assert [len(c) for c in chunks] == [4000, 4000, 2240]
    assert b"".join(chunks) == DATA
    assert cat.failed == 5
    info = flaky(monkeypatch, location, "info", 2)
    assert location.size("obj") == len(DATA)
    assert info.calls == 3


def test_download_retries_each_range(
    location: Location, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = flaky(monkeypatch, location, "cat_file", 2)
    dest = tmp_path / "obj"
    location.download(
        "obj",
        dest,
        Expected(size=len(DATA), sha256=hashlib.sha256(DATA).hexdigest()),
        Transfer(part_bytes=3000, threads=2),
    )
    assert dest.read_bytes() == DATA
    assert (cat.calls, cat.failed) == (4 + 2, 2)  # 4 ranges, 2 of the tries failed


def test_a_missing_object_is_not_retried(
    location: Location, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = flaky(monkeypatch, location, "cat_file", 0)
    with pytest.raises(DatasetNotFoundError, match=rf"^{re.escape(location.url)}/nope: not found"):
        location.read_bytes("nope")
    assert cat.calls == 1
    with pytest.raises(FileNotFoundError):
        location.read_range("nope", 0, 10)
    assert cat.calls == 2
    info = flaky(monkeypatch, location, "info", 0)
    assert location.size("nope") is None
    assert info.calls == 1


def test_a_missing_object_is_not_downloaded_again(
    location: Location, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = flaky(monkeypatch, location, "cat_file", 0)
    dest = tmp_path / "x.tar"
    with pytest.raises(DatasetNotFoundError, match=rf"^{re.escape(location.url)}/x.tar: not found"):
        location.download(
            "x.tar", dest, Expected(size=100, sha256="0" * 64), Transfer(part_bytes=10, threads=1)
        )
    assert cat.calls == 1
    assert list(tmp_path.iterdir()) == []  # neither the file nor its unfinished download


def test_after_its_attempts_a_fetch_error_names_the_url(
    location: Location, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    put = flaky(monkeypatch, location, "put_file", 100)
    local = tmp_path / "a.tar"
    local.write_bytes(b"payload")
    url = re.escape(f"{location.url}/shards/a.tar")
    last = "ConnectionError: injected failure 3 of 100"
    message = rf"^upload of .*a\.tar to {url}: unavailable after 3 attempts; last error: {last}$"
    with pytest.raises(FetchError, match=message):
        location.upload(local, "shards/a.tar")
    assert put.calls == 3
    assert not location.fs.exists(location.path("shards/a.tar"))
    cat = flaky(monkeypatch, location, "cat_file", 100)
    obj = re.escape(f"{location.url}/obj [0, 10)")
    with pytest.raises(FetchError, match=rf"^{obj}: unavailable after 3 attempts"):
        location.read_range("obj", 0, 10)
    assert cat.calls == 3
    with pytest.raises(FetchError, match=rf"^{re.escape(location.url)}/obj: unavailable after 3"):
        location.read_bytes("obj", RetryPolicy(attempts=3, backoff_s=0))
    assert cat.calls == 6


def test_a_location_pickles_with_its_retry_policy(location: Location) -> None:
    copy = pickle.loads(pickle.dumps(location))
    assert (copy.url, copy.retry, copy.storage_options) == (location.url, QUICK, {})
    assert copy.read_range("obj", 5, 9) == DATA[5:9]


@pytest.mark.parametrize("path", ["/data/ds", "relative/ds", "file:///data/ds"])
def test_a_local_path_is_not_a_location(path: str) -> None:
    with pytest.raises(ValueError, match="is not a URL"):
        Location(path)


# --- listing and removal, on a real S3 server (SeaweedFS) ----------------------------------


@pytest.fixture
def s3_location(s3_server: S3Server) -> Location:
    """A `Location` at `ds` in a new bucket of the session's server."""
    return Location(f"s3://{s3_server.new_bucket()}/ds", s3_server.storage_options, QUICK)


def put(location: Location, names: list[str]) -> dict[str, int]:
    """Objects `names` under `location`, each `name` as its bytes; their sizes by name."""
    for name in names:
        location.fs.pipe_file(location.path(name), name.encode())
    return {name: len(name.encode()) for name in names}


def test_walk_lists_every_object_page_by_page(
    s3_location: Location, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = [f"shards/{i:06d}.tar" for i in range(23)] + ["manifest.json", "shards/sub/x.idx"]
    sizes = put(s3_location, names)
    s3_location.fs.pipe_file(s3_location.path("shards/empty/"), b"")  # a folder marker
    put(Location(s3_location.url + "-other", s3_location.storage_options), ["x"])  # beside it
    monkeypatch.setattr(listing, "PAGE_SIZE", 5)
    calls = flaky(monkeypatch, s3_location, "call_s3", 2)  # pages are retried one by one
    walked = list(s3_location.walk())
    assert walked == sorted(sizes.items())
    assert (calls.calls, calls.failed) == (2 + -(-(len(names) + 1) // 5), 2)
    assert [n for n, _ in s3_location.walk("shards")] == sorted(n for n in names if "/" in n)
    assert [n for n, _ in s3_location.walk("shards/", start_after="shards/000020.tar")] == [
        "shards/000021.tar",
        "shards/000022.tar",
        "shards/sub/x.idx",
    ]
    assert list(s3_location.walk("nothing-here")) == []
    assert list(s3_location.folders()) == ["shards"]
    assert list(s3_location.folders("shards")) == ["empty", "sub"]
    assert s3_location.has_objects("shards/sub")
    assert not s3_location.has_objects("shards/empty")  # only a folder marker


def test_walk_from_the_top_of_a_bucket(s3_server: S3Server) -> None:
    bucket = s3_server.new_bucket()
    location = Location(f"s3://{bucket}", s3_server.storage_options, QUICK)
    sizes = put(location, ["a/1.jpg", "b.jpg"])
    assert list(location.walk()) == sorted(sizes.items())
    assert list(location.walk("a", start_after="a/0")) == [("a/1.jpg", 7)]
    assert list(location.folders()) == ["a"]


def test_walk_of_a_missing_bucket_raises(s3_server: S3Server) -> None:
    location = Location("s3://no-such-bucket-here/ds", s3_server.storage_options, QUICK)
    with pytest.raises(FileNotFoundError):
        list(location.walk())


def test_remove_deletes_one_object_and_a_missing_one_is_fine(
    s3_location: Location, monkeypatch: pytest.MonkeyPatch
) -> None:
    put(s3_location, ["shards/a.tar", "shards/b.tar"])
    rm = flaky(monkeypatch, s3_location, "rm_file", 1)
    s3_location.remove("shards/a.tar")
    s3_location.remove("shards/a.tar")
    s3_location.remove("never-there")
    assert (rm.calls, rm.failed) == (4, 1)
    assert [n for n, _ in s3_location.walk()] == ["shards/b.tar"]


def test_walk_and_remove_on_other_filesystems(location: Location) -> None:
    put(location, ["b/2.jpg", "a/1.jpg", "a/sub/3.jpg"])
    assert list(location.walk()) == [
        ("a/1.jpg", 7),
        ("a/sub/3.jpg", 11),
        ("b/2.jpg", 7),
        ("obj", len(DATA)),
    ]
    assert list(location.walk("a", start_after="a/1.jpg")) == [("a/sub/3.jpg", 11)]
    assert list(location.folders()) == ["a", "b"]
    location.remove("a/1.jpg")
    location.remove("a/1.jpg")
    assert [n for n, _ in location.walk("a")] == ["a/sub/3.jpg"]


def test_open_stream_reads_an_object_in_chunks(
    location: Location, monkeypatch: pytest.MonkeyPatch
) -> None:
    cat = flaky(monkeypatch, location, "cat_file", 1)
    with location.open_stream("obj", chunk_bytes=4000) as stream:
        assert stream.read(10) == DATA[:10]
        assert stream.read() == DATA[10:]
    assert (cat.calls, cat.failed) == (4, 1)  # 3 ranges, the first tried twice
    with pytest.raises(DatasetNotFoundError, match=r"/nope: not found$"):
        location.open_stream("nope")
