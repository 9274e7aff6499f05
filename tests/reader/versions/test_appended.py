"""Every reader over a dataset grown by `fastpack.compiler.append`: each version read with its own
samples by `Dataset`, `StreamingDataset` and the DALI loader (over a path and over a Dataset),
the latest by default; `verify_dataset` finds every version's files whole; opening an earlier
version reads one manifest and one index more than the latest's."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fastpack.compiler import BuildOptions, build
from fastpack.compiler.append import append
from fastpack.formats import DatasetFiles
from fastpack.reader import CenterCrop, Dataset, StreamingDataset, make_dali_loader, verify_dataset

from tests.conftest import jpeg_bytes


def _folder(root: Path, classes: dict[str, int], seed: int) -> Path:
    for c, (name, count) in enumerate(sorted(classes.items())):
        (root / name).mkdir(parents=True, exist_ok=True)
        for i in range(count):
            data = jpeg_bytes(40 + i % 3 * 8, 48, seed=seed * 1000 + c * 100 + i)
            (root / name / f"{seed}_{i:03d}.jpg").write_bytes(data)
    return root


@pytest.fixture(scope="module")
def grown(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset of 6 samples (version 1), grown by 4 (version 2) and by 3 with a new class
    (version 3)."""
    tmp = tmp_path_factory.mktemp("grown")
    ds = tmp / "ds"
    options = BuildOptions(workers=1, shard_size=6000, progress=False)
    build(_folder(tmp / "a", {"cat": 3, "dog": 3}, 0), ds, options)
    quiet = BuildOptions(workers=1, progress=False)
    append(ds, _folder(tmp / "b", {"cat": 2, "dog": 2}, 1), quiet)
    append(ds, _folder(tmp / "c", {"dog": 1, "eel": 2}, 2), quiet)
    return ds


SAMPLES = {1: 6, 2: 10, 3: 13}


def _keys(files: DatasetFiles) -> list[str]:
    return [files.index.key(i) for i in range(len(files))]


def test_dataset_and_stream_read_each_version(grown: Path, tmp_path: Path) -> None:
    latest_keys = _keys(DatasetFiles(grown))
    for version, count in SAMPLES.items():
        ds = Dataset(grown, version=version, transform=CenterCrop(32))
        assert (ds.version, len(ds)) == (version, count)
        assert [ds.key(i) for i in range(count)] == latest_keys[:count]  # earlier rows kept
        images, labels = ds.__getitems__(list(range(count)))
        assert images.shape == (count, 32, 32, 3)
        assert labels.tolist() == ds.labels.tolist()
        stream = StreamingDataset(grown, version=version, shuffle=False)
        assert sorted(int(label) for _, label in stream) == sorted(ds.labels.tolist())
    assert Dataset(grown).classes == ("cat", "dog", "eel")
    assert Dataset(grown, version=2).classes == ("cat", "dog")


def test_the_dali_loader_reads_each_version(grown: Path) -> None:
    for version, count in SAMPLES.items():
        options = {"batch_size": 4, "transform": CenterCrop(32), "num_workers": 1}
        by_path = make_dali_loader(grown, version=version, shuffle=False, **options)  # type: ignore[arg-type]
        labels = sorted(int(v) for _, batch in by_path for v in batch)
        assert len(labels) == count
        fed = make_dali_loader(Dataset(grown, version=version), shuffle=False, **options)  # type: ignore[arg-type]
        assert sorted(int(v) for _, batch in fed for v in batch) == labels
    with pytest.raises(ValueError, match=r"version=1, but the Dataset reads version 3"):
        make_dali_loader(Dataset(grown), batch_size=4, version=1)


def test_verify_finds_every_version_whole(grown: Path) -> None:
    report = verify_dataset(grown)
    assert report.ok, report.format()


def test_an_earlier_version_opens_about_as_fast_as_the_latest(grown: Path) -> None:
    """Opening version 1 reads the latest manifest, version 1's and its index; the latest reads
    its manifest and index. Medians of 30 opens, a generous bound against a loaded machine."""

    def median_open(version: int | None) -> float:
        times = []
        for _ in range(30):
            start = time.perf_counter()
            DatasetFiles(grown, version=version)
            times.append(time.perf_counter() - start)
        return sorted(times)[len(times) // 2]

    latest, earliest = median_open(None), median_open(1)
    assert earliest < 3 * latest + 0.002, (earliest, latest)


def test_a_reader_of_version_1_keeps_reading_through_an_append(
    tmp_path: Path, make_image_folder: Callable[..., Path]
) -> None:
    ds = tmp_path / "ds"
    build(_folder(tmp_path / "a", {"cat": 3, "dog": 3}, 0), ds, BuildOptions(progress=False))
    reader = Dataset(ds, transform=CenterCrop(32))
    iterator = iter(reader)
    first = next(iterator)
    append(ds, _folder(tmp_path / "b", {"cat": 2}, 1), BuildOptions(workers=1, progress=False))
    rest = list(iterator)
    assert len([first, *rest]) == 6
    assert reader.version == 1
    copy = Dataset(ds, version=reader.version)
    assert len(copy) == 6
    assert len(Dataset(ds)) == 8
