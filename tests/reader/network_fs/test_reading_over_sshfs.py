"""Every reader over a real network file system (sshfs through a latency proxy): the same
samples as on the local disk, read with `pread` many at a time, read ahead, or copied to a local
cache; damaged shards on the mount named in clear errors."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fastpack.formats import DatasetNotFoundError, TruncatedFileError, read_manifest
from fastpack.reader import CenterCrop, Dataset, StreamingDataset, make_loader
from fastpack.reader.order import EpochBatch
from fastpack.reader.shard_files import IoChoice

from fastpack.info import dataset_info
from tests.network_fs import NetworkFs
from tests.reader.conftest import Built
from tests.reader.streaming._streaming_data import counts, indices, sample_of_image

DELAY_S = 0.002  # a round trip of 2 ms, as a file server in the same data centre


@pytest.fixture
def mounted_dataset(network_fs: NetworkFs, build_dataset: Callable[..., Built]) -> Path:
    """A dataset of 5 classes x 6 images in shards of a few samples, on the mount (2 ms)."""
    built = build_dataset(classes=5, per_class=6, size=48, shard_size=12_000)
    shutil.copytree(built.path, network_fs.exported / "ds")
    network_fs.remount(delay_s=DELAY_S)
    return network_fs.mount / "ds"


def local(network_fs: NetworkFs, mounted: Path) -> Path:
    return network_fs.exported / mounted.relative_to(network_fs.mount)


def test_the_map_style_loader_reads_the_mount_as_the_local_disk(
    network_fs: NetworkFs, mounted_dataset: Path
) -> None:
    on_mount, on_disk = Dataset(mounted_dataset), Dataset(local(network_fs, mounted_dataset))
    assert (on_mount.io, on_disk.io) == ("pread", "mmap")
    before = network_fs.proxy.bytes_to_clients()
    batches = []
    for dataset in (on_mount, on_disk):
        dataset.transform = CenterCrop(32)
        loader = make_loader(dataset, batch_size=4, num_workers=2, seed=3)
        stride = loader.batch_sampler.ahead_stride  # type: ignore[union-attr]
        assert stride == (2 if dataset is on_mount else 0)  # a worker's next batch, 2 places on
        batches.append([(np.asarray(x).copy(), np.asarray(y).copy()) for x, y in loader])
    assert len(batches[0]) == len(batches[1]) == 8
    for (x0, y0), (x1, y1) in zip(*batches, strict=True):
        np.testing.assert_array_equal(x0, x1)
        np.testing.assert_array_equal(y0, y1)
    shards = sum(s.bytes for s in on_disk.manifest.shards)
    assert network_fs.proxy.bytes_to_clients() - before > shards // 2  # read through the mount


def test_a_batch_reads_its_ranges_at_once_and_the_next_batch_ahead(
    mounted_dataset: Path,
) -> None:
    dataset = Dataset(mounted_dataset, transform=CenterCrop(32))
    first, second = [0, 7, 13, 29], [3, 11, 17, 22]
    reference = dataset.__getitems__(second)[0]
    state = dataset._opened()
    dataset.__getitems__(EpochBatch(first, 0, ahead=second))
    ranges = state.shards._ranges
    assert ranges is not None
    assert len(ranges._ahead) == len(second)  # the next batch's reads are under way
    ahead = dict(ranges._ahead)
    images, labels = dataset.__getitems__(EpochBatch(second, 0))
    assert all(future.done() for future in ahead.values())
    np.testing.assert_array_equal(images, reference)
    np.testing.assert_array_equal(labels, dataset.labels[second])


def test_streaming_reads_ahead_on_the_mount_and_yields_every_sample(
    network_fs: NetworkFs, mounted_dataset: Path
) -> None:
    by_digest = sample_of_image(local(network_fs, mounted_dataset))
    dataset = StreamingDataset(mounted_dataset, seed=5, shuffle_window=2)
    assert dataset.io == "pread"
    source = dataset._source([c for w in dataset.plan().windows for c in w])
    assert source._readahead is not None  # type: ignore[attr-defined]
    source.close()
    seen = indices((image for image, _ in dataset), by_digest)
    assert counts(seen, 30).tolist() == [1] * 30


def test_streaming_with_a_cache_dir_copies_whole_shards_to_local_disk(
    network_fs: NetworkFs, mounted_dataset: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    manifest = read_manifest(mounted_dataset / "fastpack.json")
    by_digest = sample_of_image(local(network_fs, mounted_dataset))
    dataset = StreamingDataset(mounted_dataset, seed=1, cache_dir=cache)
    assert dataset.io == "mmap"  # the copies are on local disk
    seen = indices((image for image, _ in dataset), by_digest)
    assert counts(seen, 30).tolist() == [1] * 30
    copies = {
        p.relative_to(p.parents[1]).as_posix(): p.stat().st_size
        for p in cache.glob("*/shards/*.tar")
    }
    assert copies == {s.name: s.bytes for s in manifest.shards}
    assert not list(cache.rglob("*.part"))
    before = network_fs.proxy.bytes_to_clients()
    dataset.set_epoch(1)
    assert len(list(dataset)) == 30
    assert network_fs.proxy.bytes_to_clients() - before < 4096  # the epoch after: from the cache


def test_a_cache_limit_evicts_copied_shards(mounted_dataset: Path, tmp_path: Path) -> None:
    manifest = read_manifest(mounted_dataset / "fastpack.json")
    largest = max(s.bytes for s in manifest.shards)
    limit = 3 * largest  # shuffle_window 1 + prefetch 2
    dataset = StreamingDataset(
        mounted_dataset,
        cache_dir=tmp_path / "cache",
        cache_limit=limit,
        shuffle_window=1,
        prefetch=2,
    )
    assert len(list(dataset)) == 30
    cached = sum(p.stat().st_size for p in (tmp_path / "cache").glob("*/shards/*.tar"))
    assert 0 < cached <= limit < sum(s.bytes for s in manifest.shards)


def test_a_truncated_shard_on_the_mount_is_named(
    network_fs: NetworkFs, mounted_dataset: Path, tmp_path: Path
) -> None:
    manifest = read_manifest(mounted_dataset / "fastpack.json")
    shard = manifest.shards[1]
    on_disk = local(network_fs, mounted_dataset) / shard.name
    with on_disk.open("r+b") as f:
        f.truncate(shard.bytes // 2)
    network_fs.remount(delay_s=DELAY_S)  # no attribute cached from before
    dataset = Dataset(mounted_dataset, transform=CenterCrop(32))
    in_shard = np.flatnonzero(dataset._opened().index.shard == 1).tolist()
    with pytest.raises(TruncatedFileError, match=rf"{shard.name}: shard 1 listed in .* has"):
        dataset.__getitems__(in_shard)
    cache = tmp_path / "cache"
    streaming = StreamingDataset(mounted_dataset, cache_dir=cache, shuffle=False)
    with pytest.raises(TruncatedFileError, match=rf"{shard.name}: has {shard.bytes // 2} bytes"):
        list(streaming)
    name = Path(shard.name).name  # downloads of other shards in flight may finish later
    assert not list(cache.rglob(f".{name}.*.part"))  # nothing of it half-copied is left
    assert not (next(cache.iterdir()) / shard.name).exists()


def test_a_missing_shard_on_the_mount_is_named(
    network_fs: NetworkFs, mounted_dataset: Path, tmp_path: Path
) -> None:
    shard = read_manifest(mounted_dataset / "fastpack.json").shards[0]
    os.remove(local(network_fs, mounted_dataset) / shard.name)
    network_fs.remount(delay_s=DELAY_S)
    streaming = StreamingDataset(mounted_dataset, cache_dir=tmp_path / "cache", shuffle=False)
    with pytest.raises(DatasetNotFoundError, match=rf"{shard.name}: not found"):
        list(streaming)
    with pytest.raises(DatasetNotFoundError, match=rf"{shard.name}: shard 0 listed in"):
        list(StreamingDataset(mounted_dataset, shuffle=False))


def test_dali_reads_the_mount_without_maps_and_matches_the_local_disk(
    network_fs: NetworkFs, mounted_dataset: Path
) -> None:
    batches = []
    for path in (mounted_dataset, local(network_fs, mounted_dataset)):
        dataset = Dataset(path, transform=CenterCrop(32))
        loader = make_loader(dataset, batch_size=5, shuffle=False, num_workers=2, loader="dali")
        assert loader.options.dont_use_mmap is (path == mounted_dataset)  # type: ignore[union-attr]
        batches.append([(np.asarray(x).copy(), np.asarray(y).copy()) for x, y in loader])
        loader.close()  # type: ignore[union-attr]
    assert len(batches[0]) == len(batches[1]) == 6
    for (x0, y0), (x1, y1) in zip(*batches, strict=True):
        np.testing.assert_array_equal(x0, x1)
        np.testing.assert_array_equal(y0, y1)


def test_info_names_the_mounts_file_system_and_read_method(mounted_dataset: Path) -> None:
    info = dataset_info(mounted_dataset)
    assert (info.file_system, info.io) == ("fuse.sshfs", "pread")
    assert "storage   fuse.sshfs (network file system: Dataset reads with pread" in info.format()


def test_make_dali_loader_reads_a_mount_without_maps_unless_told(
    network_fs: NetworkFs, mounted_dataset: Path
) -> None:
    from fastpack.reader import make_dali_loader  # noqa: PLC0415 -- optional: DALI

    cases: list[tuple[Path, IoChoice, bool]] = [
        (mounted_dataset, "auto", True),
        (local(network_fs, mounted_dataset), "auto", False),
        (mounted_dataset, "mmap", False),
    ]
    for path, told, expected in cases:
        loader = make_dali_loader(path, batch_size=5, transform=CenterCrop(32), io=told)
        assert loader.options.dont_use_mmap is expected
        loader.close()
