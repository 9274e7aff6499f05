"""Views of a dataset grown by appends: a view records the manifest digest of the version it was
made on; opened with another version it is refused naming that version and how to read it, and
read with it; `fastpack view` makes views on the latest version, or on `--version N`."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from fastpack.formats import ViewMismatchError, read_view_file
from fastpack.formats.manifest import manifest_digest
from fastpack.reader import Dataset, StreamingDataset

from fastpack.cli import main
from fastpack.view_build import build_views, save_views

from .conftest import Versioned


def _view(v: Versioned, name: str, version: int | None) -> None:
    save_views(v.path, build_views(v.path, name, fraction=0.7, seed=2, version=version))


def test_a_view_made_on_version_1_is_refused_on_another_naming_it(
    versioned: Callable[..., Versioned], publish: Callable[[Path], str], tmp_path: Path
) -> None:
    v = versioned()
    _view(v, "early", version=1)
    made = read_view_file(v.path / "views/early.fpview")
    assert made.num_samples == v.samples[0]
    assert made.dataset == manifest_digest(Dataset(v.path, version=1).manifest)
    message = re.escape(
        "view 'early' was made on version 1 of this dataset, this reader reads version 3: read "
        "it with Dataset(path, version=1, view='early')"
    )
    with pytest.raises(ViewMismatchError, match=message):
        Dataset(v.path, view="early")
    with pytest.raises(ViewMismatchError, match="this reader reads version 2"):
        StreamingDataset(v.path, version=2, view="early")
    url = publish(v.path)
    with pytest.raises(ViewMismatchError, match=message):
        StreamingDataset(url, view="early", cache_dir=tmp_path / "cache")
    ds = Dataset(v.path, version=1, view="early")
    assert len(ds) == made.count
    assert [ds.key(i) for i in range(len(ds))] == [v.keys[0][r] for r in made.rows]
    streamed = StreamingDataset(url, version=1, view="early", cache_dir=tmp_path / "cache")
    assert len(streamed) == made.count


def test_a_view_made_on_the_latest_is_refused_on_an_earlier_version(
    versioned: Callable[..., Versioned],
) -> None:
    v = versioned()
    _view(v, "late", version=None)
    assert read_view_file(v.path / "views/late.fpview").num_samples == v.samples[2]
    with pytest.raises(ViewMismatchError, match=r"made on version 3 of this dataset, this reader "):
        Dataset(v.path, version=1, view="late")
    assert len(Dataset(v.path, view="late")) == read_view_file(v.path / "views/late.fpview").count


def test_a_view_of_another_dataset_is_still_named_so(versioned: Callable[..., Versioned]) -> None:
    a, b = versioned(name="a"), versioned(name="b", seed=1)
    _view(a, "early", version=1)
    with pytest.raises(ViewMismatchError, match="was made for another dataset"):
        Dataset(b.path, version=1, view=a.path / "views/early.fpview")


def test_fastpack_view_takes_a_version(
    versioned: Callable[..., Versioned], capsys: pytest.CaptureFixture[str]
) -> None:
    v = versioned()
    assert main(["view", str(v.path), "second", "--fraction", "0.5", "--version", "2"]) == 0
    assert f"of {v.samples[1]} samples" in capsys.readouterr().out
    second = read_view_file(v.path / "views/second.fpview")
    assert second.dataset == manifest_digest(Dataset(v.path, version=2).manifest)
    assert main(["view", str(v.path), "latest", "--fraction", "0.5"]) == 0
    assert read_view_file(v.path / "views/latest.fpview").num_samples == v.samples[2]
    assert main(["view", str(v.path), "none", "--version", "9"]) == 1
    assert "no version 9; the dataset has versions 1 to 3" in capsys.readouterr().err


def test_a_view_of_a_version_at_a_url(
    versioned: Callable[..., Versioned], publish: Callable[[Path], str]
) -> None:
    v = versioned()
    url = publish(v.path)
    (view,) = build_views(url, "early", fraction=0.7, seed=2, version=1)
    (local,) = build_views(v.path, "early", fraction=0.7, seed=2, version=1)
    assert view.dataset == local.dataset
    assert view.rows.tolist() == local.rows.tolist()
    assert build_views(url, "late", fraction=0.7)[0].num_samples == v.samples[2]
