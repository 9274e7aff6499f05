"""Dataset: every sample comes back as stored and decoded; batches; pickling; bad arguments."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import simplejpeg
from fastpack.formats import DatasetNotFoundError
from fastpack.reader import CenterCrop, Dataset, RandomResizedCrop
from fastpack.reader.errors import MissingFieldError

from ..conftest import Built


def test_every_sample_matches_its_source(build_dataset: Callable[..., Built]) -> None:
    built = build_dataset(classes=3, per_class=5)
    ds = Dataset(built.path)
    assert len(ds) == 15
    assert ds.classes == ("class_00", "class_01", "class_02")
    seen = set()
    for i in range(len(ds)):
        source = built.source / ds.source(i)
        original = source.read_bytes()
        image, label = ds[i]
        assert bytes(ds.read_bytes(i)) == original
        assert image.dtype == np.uint8
        assert image.ndim == 3
        assert image.shape[2] == 3
        np.testing.assert_array_equal(image, simplejpeg.decode_jpeg(original, colorspace="RGB"))
        assert isinstance(label, np.int64)
        assert ds.classes[label] == source.parent.name
        seen.add(ds.source(i))
    assert len(seen) == 15
    assert ds.labels.tolist() == [int(ds[i][1]) for i in range(len(ds))]


def test_getitems_matches_getitem(build_dataset: Callable[..., Built]) -> None:
    ds = Dataset(build_dataset().path, transform=RandomResizedCrop(24), seed=3)
    ds.set_epoch(2)
    indices = [5, 0, 11, 5]
    images, labels = ds.__getitems__(indices)
    assert images.shape == (4, 24, 24, 3)
    assert images.dtype == np.uint8
    assert labels.dtype == np.int64
    assert labels.shape == (4,)
    for k, i in enumerate(indices):
        image, label = ds[i]
        np.testing.assert_array_equal(images[k], image)
        assert labels[k] == label


def test_getitems_without_transform(build_dataset: Callable[..., Built]) -> None:
    ds = Dataset(build_dataset().path)
    first = ds[0][0]
    same = [i for i in range(len(ds)) if ds[i][0].shape == first.shape]
    images, _labels = ds.__getitems__(same)
    assert images.shape == (len(same), *first.shape)
    for k, i in enumerate(same):
        np.testing.assert_array_equal(images[k], ds[i][0])
    other = next(i for i in range(len(ds)) if ds[i][0].shape != first.shape)
    with pytest.raises(ValueError, match=rf"samples 0 and {other} have sizes .*transform"):
        ds.__getitems__([0, other])


def test_pickle_carries_configuration_only(build_dataset: Callable[..., Built]) -> None:
    small = Dataset(build_dataset(per_class=2, name="small").path, transform=CenterCrop(16))
    large = Dataset(build_dataset(per_class=12, name="large").path, transform=CenterCrop(16))
    for ds in (small, large):
        ds[0]  # open the index and a shard
        ds.set_epoch(4)
    blobs = [pickle.dumps(ds) for ds in (small, large)]
    assert len(blobs[0]) < 1000
    assert abs(len(blobs[0]) - len(blobs[1])) < 16  # only the path differs
    copy = pickle.loads(blobs[1])
    assert copy._state is None
    assert copy.epoch == 4
    assert copy.seed == large.seed
    for i in (0, len(large) - 1):
        np.testing.assert_array_equal(copy[i][0], large[i][0])


def test_index_out_of_range(build_dataset: Callable[..., Built]) -> None:
    ds = Dataset(build_dataset().path)
    for i in (len(ds), -1):
        with pytest.raises(IndexError, match=rf"index.fpx: sample {i} out of range \[0, 12\)"):
            ds[i]
    with pytest.raises(IndexError, match="sample 12 out of range"):
        ds.__getitems__([0, 12])


def test_bad_arguments(build_dataset: Callable[..., Built], tmp_path: Path) -> None:
    path = build_dataset().path
    with pytest.raises(MissingFieldError, match=r"no field 'png'; fields are \('jpg', 'cls'\)"):
        Dataset(path, field="png")
    with pytest.raises(ValueError, match="seed must be >= 0"):
        Dataset(path, seed=-1)
    with pytest.raises(ValueError, match="epoch must be >= 0"):
        Dataset(path).set_epoch(-2)
    with pytest.raises(ValueError, match=rf"at most 2\*\*63 - 1, got {2**64}"):
        Dataset(path).set_epoch(2**64)
    with pytest.raises(TypeError):
        Dataset(path).set_epoch(0.5)  # type: ignore[arg-type]
    with pytest.raises(DatasetNotFoundError, match="nowhere: dataset directory not found"):
        Dataset(tmp_path / "nowhere")


def test_a_url_is_told_where_to_go() -> None:
    """`Dataset("s3://...")` names the URL whole and the readers that take one."""
    with pytest.raises(
        DatasetNotFoundError, match=r"^s3://bucket/train: a URL; .*StreamingDataset"
    ):
        Dataset("s3://bucket/train")


def test_pread_reads_what_mmap_reads(build_dataset: Callable[..., Built]) -> None:
    built = build_dataset(classes=2, per_class=4)
    mapped = Dataset(built.path, transform=RandomResizedCrop(24), seed=5)
    pread = pickle.loads(
        pickle.dumps(Dataset(built.path, transform=RandomResizedCrop(24), seed=5, io="pread"))
    )
    assert pread.io == "pread"
    for i in range(len(mapped)):
        assert isinstance(pread.read_bytes(i), bytes)
        assert bytes(pread.read_bytes(i)) == bytes(mapped.read_bytes(i))
    rows = list(range(len(mapped)))
    np.testing.assert_array_equal(pread.__getitems__(rows)[0], mapped.__getitems__(rows)[0])
    with pytest.raises(
        ValueError, match=r"io must be one of \('auto', 'mmap', 'pread'\), got 'aio'"
    ):
        Dataset(built.path, io="aio")  # type: ignore[arg-type]


def _mapped_kib(root: Path, suffix: str = ".tar") -> int:
    """Resident KiB of this process's maps of the files `*suffix` under `root` (smaps)."""
    total, current = 0, ""
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:
            current = fields[5] if len(fields) > 5 else ""
        elif fields[0] == "Rss:" and current.startswith(str(root)) and current.endswith(suffix):
            total += int(fields[1])
    return total


def test_reads_leave_no_shard_pages_mapped(build_dataset: Callable[..., Built]) -> None:
    path = build_dataset(classes=2, per_class=20).path
    ds = Dataset(path, transform=RandomResizedCrop(24))
    rows = list(range(len(ds)))
    ds.__getitems__(rows)
    ds[3]
    assert _mapped_kib(path) == 0
    views = [bytes(ds.read_bytes(i)) for i in rows]  # read_bytes alone keeps pages mapped
    assert _mapped_kib(path) > 0
    ds._opened().shards.release()
    assert _mapped_kib(path) == 0
    assert views == [bytes(ds.read_bytes(i)) for i in rows]  # a released map reads again


def test_a_batch_unmaps_each_images_pages_and_then_its_shards(
    build_dataset: Callable[..., Built], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each image's pages are unmapped after its decode (the blocks around its payload only),
    and every shard the batch read once after the batch; none stays mapped."""
    path = build_dataset(classes=2, per_class=20).path
    ds = Dataset(path, transform=RandomResizedCrop(24))
    rows = list(range(len(ds)))
    shards = ds._opened().shards
    ranges: list[tuple[int, int, int]] = []
    wholes: list[int] = []
    release_range, release = shards.release_range, shards.release

    def counted_range(shard: int, offset: int, size: int) -> None:
        ranges.append((shard, offset, size))
        release_range(shard, offset, size)

    def counted() -> None:
        wholes.append(_mapped_kib(path))
        release()

    monkeypatch.setattr(shards, "release_range", counted_range)
    monkeypatch.setattr(shards, "release", counted)
    ds.__getitems__(rows)
    assert len(ranges) == len(rows)
    assert len(wholes) == 1  # after the batch (Opened.release)
    assert wholes == [0]  # the ranges had unmapped everything already
    assert _mapped_kib(path) == 0
    state = ds._opened()
    assert ranges == state.places(rows, "jpg")


def test_index_pages_are_released_once_per_batch(build_dataset: Callable[..., Built]) -> None:
    path = build_dataset(classes=2, per_class=20).path
    before = _mapped_kib(path, ".fpx")  # maps the fixture itself may hold
    ds = Dataset(path, transform=CenterCrop(16))
    rows = list(range(len(ds)))  # 40 samples
    ds.__getitems__(rows)
    assert _mapped_kib(path, ".fpx") > before  # fewer than 64 samples read: not yet
    ds.__getitems__(rows)
    assert _mapped_kib(path, ".fpx") == before
    for i in range(63):
        ds[i % len(ds)]
    assert _mapped_kib(path, ".fpx") > before
    ds[0]
    assert _mapped_kib(path, ".fpx") == before
    np.testing.assert_array_equal(ds.labels, [ds[i][1] for i in rows])  # still readable


def test_batch_allocator(build_dataset: Callable[..., Built]) -> None:
    ds = Dataset(build_dataset().path, transform=CenterCrop(16))
    shapes = []

    def allocate(shape: tuple[int, ...]) -> np.ndarray:
        shapes.append(shape)
        return np.full(shape, 7, np.uint8)

    expected = ds.__getitems__([0, 1, 2])[0]
    ds.batch_allocator = allocate
    images = ds.__getitems__([0, 1, 2])[0]
    assert shapes == [(3, 16, 16, 3)]
    np.testing.assert_array_equal(images, expected)
    assert pickle.loads(pickle.dumps(ds)).batch_allocator is None  # per process, not carried
