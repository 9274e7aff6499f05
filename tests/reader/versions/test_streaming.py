"""`StreamingDataset(path_or_url, version=N)`: each version streamed with its own samples, from a
directory and from a URL (whose version-N manifest and index are fetched under their own names),
the latest by default, a missing version refused, and a stream's state refused on another
version."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fastpack.formats import MANIFEST_NAME, ChecksumMismatchError, VersionNotFoundError
from fastpack.reader import LoaderStateError, StreamingDataset

from .conftest import Versioned, roll_back


def _keys(ds: StreamingDataset) -> list[str]:
    """The keys of the samples the stream yields, in the order of the dataset's index."""
    files = ds._opened()
    return [files.index.key(i) for i in range(len(files))]


def _labels(ds: StreamingDataset) -> list[int]:
    return sorted(int(label) for _, label in ds)


@pytest.mark.parametrize("at_url", [False, True])
def test_each_version_streams_its_own_samples(
    versioned: Callable[..., Versioned],
    publish: Callable[[Path], str],
    tmp_path: Path,
    at_url: bool,
) -> None:
    v = versioned()
    where = publish(v.path) if at_url else str(v.path)
    for number, count in enumerate(v.samples, start=1):
        ds = StreamingDataset(where, version=number, shuffle=False, cache_dir=tmp_path / "cache")
        assert (ds.version, ds.manifest.num_samples, len(ds)) == (number, count, count)
        labels = _labels(ds)
        assert len(labels) == count
        assert tuple(_keys(ds)) == v.keys[number - 1]
    latest = StreamingDataset(where, cache_dir=tmp_path / "cache")
    assert latest.version == len(v.samples)


@pytest.mark.parametrize("at_url", [False, True])
def test_a_missing_version_is_refused(
    versioned: Callable[..., Versioned], publish: Callable[[Path], str], at_url: bool
) -> None:
    v = versioned()
    where = publish(v.path) if at_url else str(v.path)
    with pytest.raises(
        VersionNotFoundError, match=r"no version 7; the dataset has versions 1 to 3"
    ):
        StreamingDataset(where, version=7)
    with pytest.raises(ValueError, match="version must be >= 1"):
        StreamingDataset(where, version=0)


def test_an_earlier_manifest_at_a_url_is_checked_against_the_latest(
    versioned: Callable[..., Versioned], publish: Callable[[Path], str], tmp_path: Path
) -> None:
    v = versioned()
    first = v.path / "versions/000001/fastpack.json"
    first.write_bytes(first.read_bytes().replace(b'"classes"', b'"classes" '))
    with pytest.raises(ChecksumMismatchError, match=r"latest manifest records .* for version 1"):
        StreamingDataset(publish(v.path), version=1, cache_dir=tmp_path / "cache")


def test_a_stream_keeps_its_version_while_the_dataset_grows(
    versioned: Callable[..., Versioned],
) -> None:
    v = versioned()
    latest = roll_back(v.path, 2)  # before the append
    ds = StreamingDataset(v.path, shuffle=False)
    iterator = iter(ds)
    head = [int(next(iterator)[1])]
    (v.path / MANIFEST_NAME).write_bytes(latest)  # the append publishes version 3 mid-epoch
    rest = [int(label) for _, label in iterator]
    assert len(head + rest) == v.samples[1]
    assert ds.version == 2
    assert len(list(ds)) == v.samples[1]  # the next epoch too


def test_a_stream_state_resumes_on_its_version_only(versioned: Callable[..., Versioned]) -> None:
    v = versioned()
    ds = StreamingDataset(v.path, version=2, shuffle=False)
    iterator = iter(ds)
    head = [int(next(iterator)[1]) for _ in range(2)]
    state = ds.state_dict()
    assert state["dataset_version"] == 2
    resumed = StreamingDataset(v.path, version=2, shuffle=False)
    resumed.load_state_dict(state)
    assert len(head) + len(list(resumed)) == v.samples[1]
    with pytest.raises(
        LoaderStateError,
        match=r"saved on version 2 of this dataset, this dataset reads version 3: resume it "
        r"with StreamingDataset\(path, version=2\)",
    ):
        StreamingDataset(v.path).load_state_dict(state)
    old = {k: value for k, value in state.items() if k != "dataset_version"}  # saved before
    with pytest.raises(LoaderStateError, match="saved on version 1 of this dataset"):
        StreamingDataset(v.path, version=2).load_state_dict(old)
    StreamingDataset(v.path, version=1).load_state_dict({**old, "position": 0})
