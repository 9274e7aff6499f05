"""`Dataset(path, version=N)`: each version of a dataset grown by appends read with its own
samples, the latest by default, a version the dataset lacks refused naming those it has, and a
version kept when the dataset grows under a reader."""

from __future__ import annotations

import pickle
from collections.abc import Callable

import numpy as np
import pytest
from fastpack.formats import MANIFEST_NAME, VersionNotFoundError
from fastpack.reader import Dataset

from .conftest import Versioned, roll_back


def test_each_version_reads_its_own_samples(versioned: Callable[..., Versioned]) -> None:
    v = versioned()
    assert v.samples[0] < v.samples[1] < v.samples[2]
    for number, (count, keys) in enumerate(zip(v.samples, v.keys, strict=True), start=1):
        ds = Dataset(v.path, version=number)
        assert ds.version == number
        assert len(ds) == count
        assert tuple(ds.key(i) for i in range(len(ds))) == keys
        image, label = ds[count - 1]
        assert image.ndim == 3
        assert int(label) == int(ds.labels[count - 1])


def test_the_latest_by_default(versioned: Callable[..., Versioned]) -> None:
    v = versioned()
    ds = Dataset(v.path)
    assert (ds.version, len(ds)) == (3, v.samples[-1])
    latest = Dataset(v.path, version=3)
    assert np.array_equal(ds.labels, latest.labels)


def test_a_missing_version_names_those_there_are(versioned: Callable[..., Versioned]) -> None:
    v = versioned()
    with pytest.raises(
        VersionNotFoundError, match=r"no version 4; the dataset has versions 1 to 3"
    ):
        Dataset(v.path, version=4)
    with pytest.raises(ValueError, match=r"version must be >= 1"):
        Dataset(v.path, version=0)


def test_a_reader_keeps_its_version_while_the_dataset_grows(
    versioned: Callable[..., Versioned],
) -> None:
    v = versioned()
    latest = roll_back(v.path, 2)  # before the append
    ds, first = Dataset(v.path), Dataset(v.path, version=1)  # the latest then: version 2
    assert ds.version == 2
    before = [first[i][0] for i in range(len(first))]
    (v.path / MANIFEST_NAME).write_bytes(latest)  # the append publishes version 3
    copy = pickle.loads(pickle.dumps(ds))  # a worker's copy opens again, in the same version
    assert (copy.version, len(copy)) == (2, v.samples[1])
    assert tuple(copy.key(i) for i in range(len(copy))) == v.keys[1]
    first.close()  # opened again after the append
    assert all(np.array_equal(first[i][0], image) for i, image in enumerate(before))
    assert Dataset(v.path).version == 3
