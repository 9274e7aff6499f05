"""A remote dataset's index in the node's cache, fetched shard by shard (`IndexRows`), against a
real S3 server: little is fetched before the first sample, an epoch reads every sample right,
nothing present is fetched again (across dataset objects and forked workers), a bad slice names
its shard and URL, and a whole cached index is used as it is."""

from __future__ import annotations

import multiprocessing
import pickle
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fastpack.formats import (
    INDEX_NAME,
    MANIFEST_NAME,
    BadMagicError,
    CorruptIndexError,
    Index,
    TruncatedFileError,
    read_manifest,
)
from fastpack.formats.index_layout import section_table
from fastpack.reader import Dataset
from fastpack.reader.remote import IndexRows, index_rows
from fastpack.reader.streaming.dataset import StreamingDataset
from fastpack.reader.streaming.plan import Stream
from fastpack.reader.streaming.sources import FetchOptions
from fastpack.storage import Expected, Location
from torch.utils.data import DataLoader

from tests.conftest import jpeg_bytes
from tests.publish import publish_dataset
from tests.reader.conftest import refresh_manifest, section
from tests.reader.streaming._streaming_data import build_small, counts, indices, sample_of_image
from tests.s3_server import S3Server

ONE_AT_A_TIME = FetchOptions(threads=1)
Gets = list[tuple[str, int, int]]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """600 tiny images in 100 shards of 6 samples: an index of about 60 KB."""
    root = tmp_path_factory.mktemp("index-rows")
    rng = np.random.default_rng(0)
    for c in range(4):
        folder = root / "src" / f"class_{c:02d}"
        folder.mkdir(parents=True)
        for i in range(150):
            h, w = (int(v) for v in rng.integers(4, 16, 2))
            (folder / f"img_{i:04d}.jpg").write_bytes(jpeg_bytes(h, w, seed=c * 1000 + i))
    return build_small(root / "src", root / "ds")


@pytest.fixture(scope="module")
def by_digest(built: Path) -> dict[str, int]:
    return sample_of_image(built)


def publish(local: Path, server: S3Server) -> str:
    url = f"s3://{server.new_bucket()}/ds"
    publish_dataset(local, url, server.storage_options)
    return url


@pytest.fixture
def gets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], Gets]:
    """The ranged GETs of the index, in this process and in those it forks (logged to a file)."""
    log = tmp_path / "gets.log"
    log.touch()
    read_range = Location.read_range

    def logged(self: Location, name: str, start: int, end: int) -> bytes:
        data = read_range(self, name, start, end)
        if name == INDEX_NAME:
            with log.open("a") as f:
                f.write(f"{name} {start} {start + len(data)}\n")
        return data

    def whole(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"the index was downloaded whole: {args}")

    download = Location.download

    def no_index(self: Location, name: str, *args: object, **kwargs: object) -> None:
        if name == INDEX_NAME:
            whole(name)
        download(self, name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Location, "read_range", logged)
    monkeypatch.setattr(Location, "download", no_index)

    def taken() -> Gets:
        lines = log.read_text().splitlines()
        log.write_text("")
        return [(n, int(a), int(b)) for n, a, b in (line.split() for line in lines)]

    return taken


@pytest.fixture(autouse=True)
def rows_of_any_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fetch these small indexes shard by shard too, as a large one is."""
    monkeypatch.setattr(index_rows, "WHOLE_INDEX_BYTES", 0)


def streaming(url: str, server: S3Server, cache: Path, **options: Any) -> StreamingDataset:
    return StreamingDataset(url, cache_dir=cache, storage_options=server.storage_options, **options)


def shard_section_gets(built: Path, found: Gets) -> int:
    """How many GETs read a slice of the `shard` section: one per shard whose rows came."""
    with (built / INDEX_NAME).open("rb") as f:
        shard = section_table(f.read(4096))["shard"]
    start, end = shard.span(0, shard.elements)
    return sum(start <= a < end for _, a, _ in found)


def assert_same_rows(cached: Path, original: Path) -> None:
    """The cached index holds the original's header, table and every section a reader reads;
    the sources and CRCs, which it never fetches, are zeros (but for the ends of the sources'
    offsets, which opening reads)."""
    have, want = cached.read_bytes(), original.read_bytes()
    assert len(have) == len(want)
    sections = section_table(want[:4096])
    start = min(s.offset for s in sections.values())
    assert have[:start] == want[:start]
    for name, sec in sections.items():
        a, b = sec.span(0, sec.elements)
        unread = name.startswith("source.") or name.endswith(".crc32")
        if not unread:
            assert have[a:b] == want[a:b], name
            continue
        mine, theirs = (np.frombuffer(data[a:b], np.uint8) for data in (have, want))
        assert ((mine == 0) | (mine == theirs)).all(), name
        assert (mine != theirs).any() or not theirs.any(), name


def expected_labels(built: Path) -> np.ndarray:
    return np.asarray(Dataset(built).labels)


def test_the_first_sample_fetches_a_small_part_of_the_index(
    built: Path,
    s3_server: S3Server,
    tmp_path: Path,
    gets: Callable[[], Gets],
    by_digest: dict[str, int],
) -> None:
    url = publish(built, s3_server)
    size = (built / INDEX_NAME).stat().st_size
    dataset = streaming(
        url, s3_server, tmp_path / "cache", shuffle_window=1, prefetch=0, fetch=ONE_AT_A_TIME
    )
    image, label = next(iter(dataset))
    fetched = gets()
    assert 0 < sum(b - a for _, a, b in fetched) < size / 8
    assert shard_section_gets(built, fetched) == 1  # the rows of one shard
    sample = indices([image], by_digest)[0]
    assert label == expected_labels(built)[sample]
    marks = np.fromfile(dataset.root / (INDEX_NAME + ".rows"), np.uint8)
    assert (len(marks), int(marks.sum())) == (100, 1)


@pytest.mark.filterwarnings("ignore:This DataLoader will create 3 worker processes")
def test_an_epoch_over_forked_workers_reads_every_sample_and_fetches_each_shard_once(
    built: Path,
    s3_server: S3Server,
    tmp_path: Path,
    gets: Callable[[], Gets],
    by_digest: dict[str, int],
) -> None:
    url = publish(built, s3_server)
    dataset = streaming(url, s3_server, tmp_path / "cache", shuffle_window=3)
    plans = [dataset.plan(Stream(0, 1, w, 3)) for w in range(3)]
    shards = [{c.shard for window in p.windows for c in window} for p in plans]
    assert shards[0] & shards[1]  # the workers split a shard between them
    loader = DataLoader(dataset, batch_size=None, num_workers=3, multiprocessing_context="fork")
    images, labels = [], []
    for image, label in loader:
        images.append(image.numpy())
        labels.append(int(label))
    seen = indices(images, by_digest)
    assert (counts(seen, 600) == 1).all()
    assert labels == expected_labels(built)[seen].tolist()
    assert shard_section_gets(built, gets()) == 100
    assert_same_rows(dataset.root / INDEX_NAME, built / INDEX_NAME)
    assert (np.fromfile(dataset.root / (INDEX_NAME + ".rows"), np.uint8) == 1).all()


def test_a_pickled_dataset_shares_the_rows_present(
    built: Path, s3_server: S3Server, tmp_path: Path, gets: Callable[[], Gets]
) -> None:
    url = publish(built, s3_server)
    dataset = streaming(url, s3_server, tmp_path / "cache", shuffle=False, shuffle_window=1)
    assert sum(1 for _ in dataset) == 600
    gets()
    copy = pickle.loads(pickle.dumps(dataset))  # as a spawned DataLoader worker gets it
    assert sum(1 for _ in copy) == 600
    assert gets() == []
    dataset.close()
    copy.close()


def _first_sample(dataset: StreamingDataset) -> None:
    samples = iter(dataset)
    next(samples)
    samples.close()  # type: ignore[attr-defined]


def test_a_second_dataset_on_the_cache_fetches_only_the_rows_not_present(
    built: Path, s3_server: S3Server, tmp_path: Path, gets: Callable[[], Gets]
) -> None:
    url = publish(built, s3_server)
    cache = tmp_path / "cache"
    first = streaming(url, s3_server, cache, shuffle_window=1, prefetch=0, fetch=ONE_AT_A_TIME)
    _first_sample(first)
    assert shard_section_gets(built, gets()) == 1
    second = streaming(url, s3_server, cache, shuffle_window=2)
    assert gets() == []  # the header and table come from the cached file
    assert sum(1 for _ in second) == 600
    assert shard_section_gets(built, gets()) == 99
    third = streaming(url, s3_server, cache, shuffle=False)
    assert sum(1 for _ in third) == 600
    assert gets() == []


def _ensure_together(rows: IndexRows, start: Any, shard: int) -> None:
    start.wait()
    rows.ensure(shard)


@pytest.mark.parametrize("how", ["threads", "processes"])
def test_streams_asking_for_one_shard_at_once_fetch_it_once(
    built: Path, s3_server: S3Server, tmp_path: Path, gets: Callable[[], Gets], how: str
) -> None:
    url = publish(built, s3_server)
    manifest = read_manifest(built / MANIFEST_NAME)
    root = tmp_path / "cache"
    root.mkdir()
    rows = IndexRows(Location(url, s3_server.storage_options), manifest, root)
    gets()
    fork = multiprocessing.get_context("fork")
    start = threading.Barrier(4) if how == "threads" else fork.Barrier(4)
    make = threading.Thread if how == "threads" else fork.Process
    streams = [make(target=_ensure_together, args=(rows, start, 7)) for _ in range(4)]
    for stream in streams:
        stream.start()
    for stream in streams:
        stream.join()
    assert shard_section_gets(built, gets()) == 1
    index = Index(root / INDEX_NAME)
    local = Index(built / INDEX_NAME)
    mine = np.flatnonzero(np.asarray(local.shard) == 7)
    assert mine.size
    assert (np.asarray(index.shard)[mine] == 7).all()
    assert [index.key(int(i)) for i in mine] == [local.key(int(i)) for i in mine]
    assert {index.source(int(i)) for i in mine} == {""}  # sources are never fetched
    rows.close()


def _damaged(built: Path, tmp_path: Path, damage: Callable[[Path, slice], None]) -> Path:
    """A copy of `built` whose rows of shard 3 `damage` changed, the manifest made to match."""
    copy = tmp_path / "damaged"
    shutil.copytree(built, copy)
    rows = np.flatnonzero(np.asarray(Index(copy / INDEX_NAME).shard) == 3)
    damage(copy, slice(int(rows[0]), int(rows[-1]) + 1))
    refresh_manifest(copy)
    return copy


def _wrong_shard(root: Path, rows: slice) -> None:
    column = section(root, "shard")
    column[rows] = 2  # still non-decreasing: only the manifest's counts tell
    column.flush()


def _offset_past_the_shard(root: Path, rows: slice) -> None:
    offsets = section(root, "jpg.offset")
    offsets[rows.start + 1] = 10**9
    offsets.flush()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (_wrong_shard, r"section 'shard' puts sample (\d+) in shard 2, the manifest's sample "
         r"counts put samples \[\1, \d+\) in shard 3"),
        (_offset_past_the_shard, r"sections 'jpg.offset'/'jpg.size' put sample \d+ at bytes "
         r"\[1000000000, \d+\), the shard has \d+ bytes"),
    ],
)  # fmt: skip
def test_a_bad_slice_raises_naming_its_shard_and_url(
    built: Path,
    s3_server: S3Server,
    tmp_path: Path,
    damage: Callable[[Path, slice], None],
    message: str,
) -> None:
    url = publish(_damaged(built, tmp_path, damage), s3_server)
    dataset = streaming(url, s3_server, tmp_path / "cache", shuffle=False, shuffle_window=1)
    with pytest.raises(CorruptIndexError, match=rf"^{url}/index\.fpx: shard 3: {message}$"):
        list(dataset)
    marks = np.fromfile(dataset.root / (INDEX_NAME + ".rows"), np.uint8)
    assert marks[:3].all()
    assert not marks[3]  # the bad rows are not marked present


def test_a_whole_cached_index_is_used_as_it_is(
    built: Path,
    s3_server: S3Server,
    tmp_path: Path,
    gets: Callable[[], Gets],
    by_digest: dict[str, int],
) -> None:
    url = publish(built, s3_server)
    cache = tmp_path / "cache"
    root = streaming(url, s3_server, cache).root
    (root / (INDEX_NAME + ".rows")).unlink()
    shutil.copyfile(built / INDEX_NAME, root / INDEX_NAME)  # as a whole download leaves it
    gets()
    dataset = streaming(url, s3_server, cache, shuffle_window=2)
    images = [image for image, _ in dataset]
    assert gets() == []
    assert (counts(indices(images, by_digest), 600) == 1).all()
    assert not (root / (INDEX_NAME + ".rows")).exists()


def test_a_bad_header_raises_at_construction_naming_the_url(
    built: Path, s3_server: S3Server, tmp_path: Path
) -> None:
    copy = tmp_path / "bad-magic"
    shutil.copytree(built, copy)
    with (copy / INDEX_NAME).open("r+b") as f:
        f.write(b"NOTANIDX")
    refresh_manifest(copy)
    url = publish(copy, s3_server)
    with pytest.raises(BadMagicError, match=rf"^{url}/index\.fpx: .*index\.fpx: bad magic"):
        streaming(url, s3_server, tmp_path / "cache")


def test_an_index_shorter_than_the_manifest_says_raises_naming_the_rows(
    built: Path, s3_server: S3Server, tmp_path: Path
) -> None:
    url = publish(built, s3_server)
    data = (built / INDEX_NAME).read_bytes()
    last = int(np.flatnonzero(np.asarray(Index(built / INDEX_NAME).shard) == 99)[0])
    _, cut = section_table(data[:4096])["cls.size"].span(last, last + 1)
    s3_server.filesystem().pipe(f"{url.removeprefix('s3://')}/{INDEX_NAME}", data[:cut])
    dataset = streaming(url, s3_server, tmp_path / "cache", shuffle=False)
    with pytest.raises(
        TruncatedFileError,
        match=rf"^{url}/index\.fpx: shard 99: bytes \[\d+, \d+\) of section 'cls\.size' came "
        rf"back as \d+ bytes; the manifest records \d+ bytes$",
    ):
        list(dataset)


@pytest.fixture
def short_first_get(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_rows, "HEAD_BYTES", 100)


@pytest.mark.usefixtures("short_first_get")
def test_a_section_table_past_the_first_get_takes_a_second(
    built: Path,
    s3_server: S3Server,
    tmp_path: Path,
    gets: Callable[[], Gets],
    by_digest: dict[str, int],
) -> None:
    url = publish(built, s3_server)
    dataset = streaming(url, s3_server, tmp_path / "cache", shuffle_window=2)
    assert [(a, b) for _, a, b in gets()[:2]] == [(0, 100), (100, 64 + 48 * 12)]
    images = [image for image, _ in dataset]
    assert (counts(indices(images, by_digest), 600) == 1).all()


def test_a_small_index_is_fetched_whole_and_checked(
    built: Path,
    s3_server: S3Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    by_digest: dict[str, int],
) -> None:
    monkeypatch.setattr(index_rows, "WHOLE_INDEX_BYTES", 16 * 2**20)
    downloads: list[tuple[str, str]] = []
    ranged: list[str] = []
    download, read_range = Location.download, Location.read_range

    def logged_download(
        self: Location, name: str, dest: Path, expected: Expected, *args: Any, **kwargs: Any
    ) -> None:
        downloads.append((name, expected.sha256))
        download(self, name, dest, expected, *args, **kwargs)

    def logged_range(self: Location, name: str, start: int, end: int) -> bytes:
        ranged.append(name)
        return read_range(self, name, start, end)

    monkeypatch.setattr(Location, "download", logged_download)
    monkeypatch.setattr(Location, "read_range", logged_range)
    url = publish(built, s3_server)
    dataset = streaming(url, s3_server, tmp_path / "cache")
    seen = indices([image for image, _ in dataset], by_digest)
    assert (counts(seen, 600) == 1).all()
    manifest = read_manifest(built / MANIFEST_NAME)
    assert downloads.count((INDEX_NAME, manifest.index.sha256)) == 1  # whole, checked
    assert INDEX_NAME not in ranged  # no rows
    assert (dataset.root / INDEX_NAME).read_bytes() == (built / INDEX_NAME).read_bytes()
    assert not (dataset.root / (INDEX_NAME + ".rows")).exists()
