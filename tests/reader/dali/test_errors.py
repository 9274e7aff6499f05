"""The DALI reader's errors about damaged or unfit datasets are `FastpackError`s that name the
dataset or file and what is wrong (DALI's own errors are plain RuntimeErrors)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastpack.formats import (
    DatasetFiles,
    FastpackError,
    OffsetOutOfRangeError,
    TruncatedFileError,
)
from fastpack.reader import CenterCrop, Dataset
from fastpack.reader.dali import DaliLoader, make_dali_loader
from fastpack.reader.errors import DaliReadError, MissingFieldError

from ..conftest import Built, section


def _loader(path: Path | Dataset, **kwargs: object) -> DaliLoader:
    options: dict[str, object] = {"batch_size": 2, "transform": CenterCrop(16), "num_workers": 1}
    options.update(kwargs)
    return make_dali_loader(path, **options)  # type: ignore[arg-type]


@pytest.fixture
def path(build_dataset: Callable[..., Built]) -> Path:
    """6 samples in one shard, read in order (no shuffle) 2 at a time."""
    return build_dataset(classes=2, per_class=3, shard_size=10**6).path


def test_damaged_image(path: Path) -> None:
    files = DatasetFiles(path)
    row = len(files) - 1  # in the last batch: DALI fails mid-epoch
    offset = int(files.index.offsets("jpg")[row])
    with files.shard_path(int(files.index.shard[row])).open("r+b") as f:
        f.seek(offset)
        f.write(b"\0" * 64)  # no JPEG marker left
    loader = _loader(path)
    with pytest.raises(DaliReadError, match=rf"^{path}: DALI failed in \S*decoders\.image: ") as e:
        list(loader)
    assert isinstance(e.value, FastpackError)
    assert f"fastpack verify --decode {path}" in str(e.value)
    assert "C++ context" not in str(e.value)
    with pytest.raises(ValueError, match="this DALI loader is closed"):
        iter(loader)  # DALI's pipeline is gone after its error


def test_damaged_image_of_fed_samples(path: Path) -> None:
    """Over a Dataset (fastpack's order) DALI's decoder fails the same way; a member the index
    places past its shard's end fails in the feed, with the dataset's own error."""
    files = DatasetFiles(path)
    offset = int(files.index.offsets("jpg")[3])
    with files.shard_path(int(files.index.shard[3])).open("r+b") as f:
        f.seek(offset)
        f.write(b"\0" * 64)
    loader = _loader(Dataset(path), shuffle=False)
    with pytest.raises(DaliReadError, match=rf"^{path}: DALI failed in \S*decoders\.image: "):
        list(loader)
    sizes = section(path, "jpg.size")
    sizes[1] = 10**9
    sizes.flush()
    with pytest.raises(OffsetOutOfRangeError, match=r"sample 1 .*000000\.tar"):
        list(_loader(Dataset(path), shuffle=False))


def test_damaged_shard_index(path: Path) -> None:
    idx = DatasetFiles(path).shard_index_path(0)
    lines = idx.read_text(encoding="ascii").splitlines()
    fields = lines[2].split()
    fields[1] = str(10**9)  # the jpg member's offset, far past the end of the tar
    lines[2] = " ".join(fields)
    idx.write_text("\n".join(lines) + "\n", encoding="ascii")
    with pytest.raises(DaliReadError, match=rf"^{path}: DALI failed in \S*readers\.webdataset: "):
        _loader(path)
    with pytest.raises(DaliReadError, match=r"shards/000000\.idx"):
        _loader(path)


def test_truncated_shard(path: Path) -> None:
    tar = DatasetFiles(path).shard_path(0)
    size = tar.stat().st_size
    with tar.open("r+b") as f:
        f.truncate(size - 1024)
    with pytest.raises(
        TruncatedFileError, match=rf"000000\.tar: shard has {size - 1024} bytes, the manifest "
    ):
        _loader(path)


def test_missing_field(path: Path) -> None:
    with pytest.raises(MissingFieldError, match=r"fields \['jpg', 'cls'\], no png; the DALI") as e:
        _loader(path, field="png")
    assert isinstance(e.value, FastpackError)
    assert str(path) in str(e.value)
