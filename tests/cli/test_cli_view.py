"""`fastpack view`: views of real datasets, each option, their files, and `open_view`."""

from __future__ import annotations

import fnmatch
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from fastpack.formats import (
    MANIFEST_NAME,
    DatasetFiles,
    DatasetNotFoundError,
    View,
    ViewMismatchError,
    read_manifest,
    read_view_file,
)
from fastpack.formats.manifest import manifest_digest
from fastpack.reader import list_views, open_view, read_manifest_at

from fastpack.cli import main
from fastpack.view_build import build_views, save_views
from tests.conftest import jpeg_bytes
from tests.s3_server import S3Server

from .conftest import CLASSES, Run, write_image_folder
from .conftest import PER_CLASS as SMALL_PER_CLASS

PER_CLASS = 40
SAMPLES = len(CLASSES) * PER_CLASS


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """120 small real JPEGs in 3 classes, shuffled so that labels interleave."""
    tmp = tmp_path_factory.mktemp("views")
    for c, name in enumerate(CLASSES):
        (tmp / "src" / name).mkdir(parents=True)
        for i in range(PER_CLASS):
            data = jpeg_bytes(16 + i % 5, 20, seed=1000 * c + i)
            (tmp / "src" / name / f"{i:03d}.jpg").write_bytes(data)
    out = tmp / "ds"
    argv = ["build", tmp / "src", out, "--workers", "1", "--no-progress", "--shuffle-seed", "5"]
    if main([str(a) for a in argv]) != 0:
        raise RuntimeError("fastpack build failed")
    return out


@pytest.fixture
def writable(dataset: Path, tmp_path: Path) -> Path:
    """A copy of the dataset that a test may write views beside."""
    return Path(shutil.copytree(dataset, tmp_path / "ds"))


def printed(out: str) -> dict[str, tuple[int, str]]:
    """`name: COUNT of N samples -> PATH` lines as {name: (count, path)}."""
    found = {}
    for line in out.strip().splitlines():
        name, rest = line.split(": ", 1)
        count = rest.split(" of ", 1)[0]
        assert f" of {SAMPLES} samples -> " in rest, line
        found[name] = (int(count), rest.rsplit(" -> ", 1)[1])
    return found


def error_line(err: str) -> str:
    assert "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert line.startswith("fastpack: error: ")
    return line


def rows(path: Path) -> set[int]:
    return set(read_view_file(path).rows.tolist())


def test_split_writes_disjoint_parts_beside_the_dataset(writable: Path, run: Run) -> None:
    code, out, _ = run("view", writable, "--split", "train:0.8,val:0.2")
    assert code == 0
    views = writable / "views"
    assert printed(out) == {
        "train": (len(rows(views / "train.fpview")), str(views / "train.fpview")),
        "val": (len(rows(views / "val.fpview")), str(views / "val.fpview")),
    }
    train, val = rows(views / "train.fpview"), rows(views / "val.fpview")
    assert not train & val
    assert train | val == set(range(SAMPLES))
    assert 0.65 < len(train) / SAMPLES < 0.95
    view = read_view_file(views / "val.fpview")
    manifest = read_manifest(writable / MANIFEST_NAME)
    assert (view.dataset, view.num_samples, view.balance) == (
        manifest_digest(manifest),
        SAMPLES,
        None,
    )
    assert view.definition == {
        "classes": None,
        "fraction": None,
        "where": None,
        "seed": 0,
        "balance": False,
        "split": {"part": "val", "parts": [["train", 0.8], ["val", 0.2]]},
    }
    assert open_view(writable, manifest, "val").digest() == view.digest()
    code, out, _ = run("info", writable)
    assert "views     train, val" in out
    assert list_views(writable) == ["train", "val"]
    code, out, _ = run("info", writable, "--json")
    assert json.loads(out)["views"] == ["train", "val"]


def test_split_parts_named_after_name_need_not_cover(dataset: Path) -> None:
    views = build_views(dataset, "exp", split={"a": 0.5, "b": 0.25})
    assert [v.name for v in views] == ["exp-a", "exp-b"]
    a, b = (set(v.rows.tolist()) for v in views)
    assert not a & b
    assert 0.6 < len(a | b) / SAMPLES < 0.9  # about 3/4 of the samples


def test_views_are_reproducible_and_seeded(dataset: Path, tmp_path: Path, run: Run) -> None:
    for k in (1, 2):
        assert run("view", dataset, "--split", "t:0.5,v:0.5", "--output", tmp_path / f"{k}")[0] == 0
    first, again = tmp_path / "1", tmp_path / "2"
    assert (first / "t.fpview").read_bytes() == (again / "t.fpview").read_bytes()
    code, _, _ = run("view", dataset, "--split", "t:0.5,v:0.5", "--seed", "9", "--output", tmp_path)
    assert code == 0
    assert rows(tmp_path / "t.fpview") != rows(first / "t.fpview")
    assert not (dataset / "views").exists()  # --output: nothing beside the dataset


def test_smaller_fractions_are_subsets(dataset: Path, tmp_path: Path, run: Run) -> None:
    kept = {}
    for fraction in ("0.2", "0.5", "0.8", "1"):
        path = tmp_path / f"f{fraction}.fpview"
        code, out, _ = run("view", dataset, "part", "--fraction", fraction, "--output", path)
        assert code == 0
        assert printed(out)["part"] == (len(rows(path)), str(path))
        kept[float(fraction)] = rows(path)
    assert kept[0.2] <= kept[0.5] <= kept[0.8] <= kept[1.0] == set(range(SAMPLES))
    assert 0.3 < len(kept[0.5]) / SAMPLES < 0.7
    assert read_view_file(tmp_path / "f0.5.fpview").definition["fraction"] == 0.5


def test_classes(dataset: Path, tmp_path: Path, run: Run) -> None:
    path = tmp_path / "v.fpview"
    assert run("view", dataset, "pets", "--classes", "cats,owls", "--output", path)[0] == 0
    labels = np.asarray(DatasetFiles(dataset).index.label)
    assert rows(path) == set(np.flatnonzero(np.isin(labels, [0, 2])).tolist())
    assert len(rows(path)) == 2 * PER_CLASS


def test_where_matches_source_paths(dataset: Path, tmp_path: Path, run: Run) -> None:
    index = DatasetFiles(dataset).index
    sources = [index.source(i) for i in range(SAMPLES)]
    for glob in ("dogs/*", "*/01?.jpg", "*/0[0-1][0-4].jpg", "owls/039.jpg"):
        path = tmp_path / "v.fpview"
        assert run("view", dataset, "w", "--where", glob, "--output", path)[0] == 0
        expected = {i for i, s in enumerate(sources) if fnmatch.fnmatchcase(s, glob)}
        assert rows(path) == expected, glob
        assert expected


def test_options_combine(dataset: Path) -> None:
    """Classes, glob and fraction all hold; the split cuts what they select."""
    views = build_views(
        dataset,
        None,
        classes=["dogs", "owls"],
        where="*/0[0-2]*",
        fraction=0.7,
        split="x:0.6,y:0.4",
        seed=4,
        balance=True,
    )
    files = DatasetFiles(dataset)
    labels = np.asarray(files.index.label)
    alone = build_views(dataset, "f", fraction=0.7, seed=4)[0]
    selected = {
        i
        for i in alone.rows.tolist()
        if labels[i] in (1, 2) and fnmatch.fnmatchcase(files.index.source(i), "*/0[0-2]*")
    }
    x, y = (set(v.rows.tolist()) for v in views)
    assert not x & y
    assert x | y == selected
    assert all(v.balance == "class" and v.definition["balance"] for v in views)


def test_unknown_class_names_it_and_lists_the_known(dataset: Path, run: Run) -> None:
    code, _, err = run("view", dataset, "v", "--classes", "cats,lions")
    assert code == 1
    line = error_line(err)
    assert "unknown class 'lions'" in line
    assert "cats, dogs, owls" in line


def test_empty_view_is_an_error(dataset: Path, run: Run) -> None:
    code, _, err = run("view", dataset, "v", "--where", "birds/*", "--classes", "cats")
    assert code == 1
    line = error_line(err)
    assert "no sample fits --classes cats --where 'birds/*'" in line
    assert "the view 'v' would be empty" in line
    assert not (dataset / "views").exists()


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["--fraction", "0.5"], 1, "a view needs a name"),
        (["v", "--split", "a:0.7,b:0.4"], 1, "the fractions sum to 1.1, more than 1"),
        (["v", "--split", "a:0.5,a:0.5"], 1, "part names repeat"),
        (["v", "--split", "a0.5"], 2, "should be NAME:FRACTION"),
        (["v", "--fraction", "1.5"], 2, r"expected a number in \(0, 1\]"),
        (["v", "--fraction", "0"], 2, "out of range"),
        (["a/b", "--fraction", "0.5"], 1, "view name 'a/b'"),
    ],
)
def test_bad_options(dataset: Path, run: Run, argv: list[str], code: int, message: str) -> None:
    found, _, err = run("view", dataset, *argv)
    assert found == code
    assert "Traceback" not in err
    assert re.search(message, err), err


def test_output_file_and_directory(dataset: Path, tmp_path: Path, run: Run) -> None:
    code, out, _ = run("view", dataset, "one", "--fraction", "0.5", "--output", tmp_path / "a.bin")
    assert code == 0
    assert printed(out)["one"][1] == str(tmp_path / "a.bin")
    assert read_view_file(tmp_path / "a.bin").name == "one"
    (tmp_path / "dir").mkdir()
    code, out, _ = run("view", dataset, "two", "--fraction", "0.5", "--output", tmp_path / "dir")
    assert printed(out)["two"][1] == str(tmp_path / "dir" / "two.fpview")
    code, out, _ = run(
        "view", dataset, "--split", "a:0.5,b:0.5", "--output", tmp_path / "new" / "split"
    )
    assert code == 0
    assert sorted(p.name for p in (tmp_path / "new" / "split").iterdir()) == [
        "a.fpview",
        "b.fpview",
    ]


def test_open_view_by_name_path_and_object(writable: Path, tmp_path: Path) -> None:
    (view,) = build_views(writable, "half", fraction=0.5)
    manifest = read_manifest(writable / MANIFEST_NAME)
    (beside,) = save_views(writable, [view])
    (elsewhere,) = save_views(writable, [view], output=tmp_path / "x.fpview")
    for spec in ("half", beside, Path(elsewhere), view):
        opened = open_view(writable, manifest, spec)
        assert isinstance(opened, View)
        assert opened.digest() == view.digest()


def test_open_view_refuses_a_view_of_another_dataset(
    built: tuple[Path, Path], tmp_path: Path, run: Run
) -> None:
    """Same source, same sample count, other build options: another dataset all the same."""
    source, first = built
    other = tmp_path / "other"
    assert (
        run("build", source, other, "--workers", "1", "--no-progress", "--shuffle-seed", "1")[0]
        == 0
    )
    assert (
        read_manifest(other / MANIFEST_NAME).num_samples
        == read_manifest(first / MANIFEST_NAME).num_samples
    )
    path = tmp_path / "v.fpview"
    assert run("view", first, "v", "--fraction", "0.5", "--output", path)[0] == 0
    with pytest.raises(
        ViewMismatchError, match=r"v\.fpview: view 'v' was made for another dataset"
    ):
        open_view(other, read_manifest(other / MANIFEST_NAME), path)
    assert open_view(first, read_manifest(first / MANIFEST_NAME), path).name == "v"


def test_open_view_names_what_it_looked_for(writable: Path, run: Run) -> None:
    manifest = read_manifest(writable / MANIFEST_NAME)
    with pytest.raises(DatasetNotFoundError, match=r"views/val\.fpview: no view 'val' .*\(none\)"):
        open_view(writable, manifest, "val")
    assert run("view", writable, "--split", "a:0.5,b:0.5")[0] == 0
    with pytest.raises(
        DatasetNotFoundError, match="no view 'val' beside the dataset; the views there are: a, b"
    ):
        open_view(writable, manifest, "val")
    with pytest.raises(DatasetNotFoundError, match=r"nope\.fpview: view file not found"):
        open_view(writable, manifest, writable / "nope.fpview")


def test_view_of_a_dataset_on_s3(
    s3_env: S3Server, s3_bucket: str, tmp_path: Path, run: Run
) -> None:
    """Read through the URL, written beside the dataset by an upload, or to a local file."""
    source = write_image_folder(tmp_path / "src")
    url = f"s3://{s3_bucket}/ds"
    argv = ["build", source, url, "--workers", "1", "--no-progress", "--shard-size", "4KB"]
    assert run(*argv, "--staging", tmp_path / "staging")[0] == 0
    code, out, _ = run("view", url, "--split", "train:0.6,val:0.4")
    assert code == 0
    manifest = read_manifest_at(url)
    lines = [line.split(" -> ") for line in out.strip().splitlines()]
    assert [path for _, path in lines] == [f"{url}/views/train.fpview", f"{url}/views/val.fpview"]
    train = open_view(url, manifest, "train")
    val = open_view(url, manifest, f"{url}/views/val.fpview")
    assert not set(train.rows.tolist()) & set(val.rows.tolist())
    assert train.count + val.count == manifest.num_samples
    assert list_views(url) == ["train", "val"]
    local = tmp_path / "cats.fpview"
    assert run("view", url, "cats", "--classes", "cats", "--output", local)[0] == 0
    assert open_view(url, manifest, local).count == SMALL_PER_CLASS
