"""Iterating a Dataset: every sample in order, and an unreadable sample raises instead of ending
the iteration early (Python's sequence protocol takes any IndexError for the end of the data)."""

from __future__ import annotations

import importlib
from collections.abc import Callable

import numpy as np
import pytest
from fastpack.formats import FastpackError, OffsetOutOfRangeError
from fastpack.reader import Dataset
from fastpack.reader.map_style.opened import Opened
from fastpack.reader.shard_files import IoMethod

from ..conftest import Built, section


def test_iteration_yields_every_sample_in_order(build_dataset: Callable[..., Built]) -> None:
    ds = Dataset(build_dataset(classes=4, per_class=16).path)
    samples = list(ds)
    assert len(samples) == len(ds) == 64
    for i, (image, label) in enumerate(samples):
        expected_image, expected_label = ds[i]
        np.testing.assert_array_equal(image, expected_image)
        assert label == expected_label
        assert isinstance(label, np.int64)


@pytest.mark.parametrize("io", ["mmap", "pread"])
def test_iteration_raises_at_an_offset_past_the_shard_end(
    build_dataset: Callable[..., Built], io: IoMethod
) -> None:
    path = build_dataset(classes=4, per_class=16).path
    ds = Dataset(path, io=io)
    files = ds._opened().files
    shard = int(files.index.shard[32])
    shard_size = files.shard_path(shard).stat().st_size
    offsets = section(path, "jpg.offset")
    offsets[32] = shard_size + 1  # the map `ds` holds sees the write: same page cache
    offsets.flush()
    del offsets
    with pytest.raises(OffsetOutOfRangeError, match=r"sample 32 field 'jpg' spans bytes") as e:
        list(ds)
    assert not isinstance(e.value, IndexError)
    assert str(files.shard_path(shard)) in str(e.value)
    with pytest.raises(OffsetOutOfRangeError, match="sample 32"):
        list(Dataset(path, io=io))  # opened after the damage too


def test_an_index_error_while_reading_is_not_the_end_of_the_data(
    build_dataset: Callable[..., Built], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without `Dataset.__iter__`, `list(ds)` would return the 32 samples before this error."""
    ds = Dataset(build_dataset(classes=4, per_class=16).path)
    payload = Opened.payload

    def failing_payload(self: Opened, i: int, field: str) -> memoryview | bytes:
        if i == 32:
            raise IndexError("planted at sample 32")
        return payload(self, i, field)

    monkeypatch.setattr(Opened, "payload", failing_payload)
    with pytest.raises(IndexError, match="planted at sample 32"):
        list(ds)
    samples = iter(ds)
    assert len([next(samples) for _ in range(32)]) == 32
    with pytest.raises(IndexError, match="planted at sample 32"):
        next(samples)  # not StopIteration


def _subclasses(cls: type[BaseException]) -> set[type[BaseException]]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_subclasses(sub)}
    return found


def test_no_fastpack_error_is_an_index_error() -> None:
    """Only a sample number past the end of the data may raise IndexError."""
    for module in ("fastpack.reader", "fastpack.storage", "fastpack.compiler"):
        importlib.import_module(module)
    errors = _subclasses(FastpackError)
    assert OffsetOutOfRangeError in errors
    assert len(errors) >= 10
    assert [e.__name__ for e in errors if issubclass(e, IndexError)] == []
