"""`append(..., skip_duplicates=True)`: new inputs whose bytes the dataset stores (any
version) or an earlier new input has are left out, counted in `stats.duplicates` and named in
the summary; a candidate whose bytes differ is kept; without the flag they are appended."""

from __future__ import annotations

import dataclasses
import io
import os
import shutil
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest
from fastpack.compiler import AppendError, BuildOptions, append, build
from fastpack.compiler.append.dataset import image_field
from fastpack.compiler.build_dir import BUILD_DIR
from fastpack.compiler.jobs.duplicates import (
    KEYS,
    SAMPLES,
    StoredDataset,
    StoredImages,
    content_key,
    find_stored,
    stored_keys,
    write_table,
)
from fastpack.formats import DatasetFiles, FastpackError, Schema
from fastpack.reader import verify_dataset

from fastpack.cli import main
from tests.compiler._helpers import QUIET, tree_bytes
from tests.compiler.append._datasets import samples, write_folder
from tests.compiler.test_resume import group_gone, wait_for
from tests.conftest import jpeg_bytes

ONE = BuildOptions(workers=1, **QUIET)


def _source(root: Path, dataset: Path) -> tuple[Path, dict[str, bytes]]:
    """New inputs: (a) two stored images under new names, (b) a pair of equal new images,
    (d) two other new images. Stored images of at most 48 px are kept byte for byte."""
    stored = [s for s in samples(dataset) if s[3] in _small(dataset)]
    files = {
        "cat/copy_a.jpg": stored[0][3],
        "dog/copy_b.jpg": stored[-1][3],
        "eel/twin_1.jpg": jpeg_bytes(30, 36, seed=501),
        "eel/twin_2.jpg": jpeg_bytes(30, 36, seed=501),
        "eel/fresh_1.jpg": jpeg_bytes(28, 30, seed=502),
        "eel/fresh_2.jpg": jpeg_bytes(32, 26, seed=503),
    }
    return write_folder(root, files), files


def _small(dataset: Path) -> set[bytes]:
    """The stored images that are their input's bytes (not shrunk to max_side 48)."""
    inputs = {p.read_bytes() for p in (dataset.parent / "a").rglob("*.jpg")}
    return {s[3] for s in samples(dataset) if s[3] in inputs}


def test_duplicates_are_left_out_and_counted(dataset: Path, tmp_path: Path) -> None:
    plain = Path(shutil.copytree(dataset, tmp_path / "plain"))
    source, files = _source(tmp_path / "new", dataset)
    stored = {s[3]: s[0] for s in samples(dataset)}
    summary = append(dataset, source, ONE, skip_duplicates=True)

    assert (summary.added.inputs, summary.added.samples, summary.duplicates) == (6, 3, 3)
    new = samples(dataset)[9:]
    assert sorted(s[1] for s in new) == ["eel/fresh_1.jpg", "eel/fresh_2.jpg", "eel/twin_1.jpg"]
    assert all(s[3] == files[s[1]] for s in new)  # stored byte for byte
    manifest = DatasetFiles(dataset).manifest
    assert manifest.stats["duplicates"] == 3
    assert manifest.stats["inputs"] == 9 + 6  # keys continue after every plan position
    assert manifest.stats["rejected"] == 0
    assert manifest.rejects is None
    report = verify_dataset(dataset)
    assert report.ok, report
    twin = next(s[0] for s in new if s[1] == "eel/twin_1.jpg")
    assert set(summary.duplicate_lines) == {
        ("cat/copy_a.jpg", stored[files["cat/copy_a.jpg"]]),
        ("dog/copy_b.jpg", stored[files["dog/copy_b.jpg"]]),
        ("eel/twin_2.jpg", twin),
    }
    text = summary.format()
    assert "\n3 inputs left out as duplicates (stats.duplicates in the manifest):\n" in text
    assert f"\n  eel/twin_2.jpg -> {twin}" in text
    assert f"\n  cat/copy_a.jpg -> {stored[files['cat/copy_a.jpg']]}" in text

    # the next append finds the stored copies in every version, the new ones included
    again = append(dataset, source, ONE, skip_duplicates=True)
    assert (again.added.samples, again.duplicates) == (0, 6)
    assert DatasetFiles(dataset).manifest.stats["duplicates"] == 9

    without = append(plain, source, ONE)
    assert (without.added.samples, without.duplicates) == (6, 0)
    assert "duplicates" not in DatasetFiles(plain).manifest.stats
    assert "left out as duplicates" not in without.format()


def test_the_summary_lists_twenty(dataset: Path, tmp_path: Path) -> None:
    source = tmp_path / "many"
    for i in range(25):
        (source / "eel").mkdir(parents=True, exist_ok=True)
        (source / "eel" / f"{i:02d}.jpg").write_bytes(jpeg_bytes(30, 30, seed=700))
    summary = append(dataset, source, ONE, skip_duplicates=True)
    assert (summary.added.samples, summary.duplicates) == (1, 24)
    lines = summary.format().splitlines()
    listed = [line for line in lines if line.startswith("  eel/")]
    assert len(listed) == 20
    assert listed[0] == f"  eel/01.jpg -> {samples(dataset)[-1][0]}"
    assert lines[-1] == "  ... and 4 more"


def test_a_candidate_whose_bytes_differ_is_kept() -> None:
    mine, other = jpeg_bytes(20, 20, seed=1), jpeg_bytes(20, 20, seed=2)
    keys = np.array([content_key(mine)] * 2, dtype=np.uint64)  # fabricated: other's key is mine
    samples_ = np.array([4, 7], dtype=np.uint64)
    read = {4: other, 7: other}
    assert find_stored(mine, keys, samples_, read.__getitem__) is None
    read[7] = mine  # the second candidate holds the bytes
    assert find_stored(mine, keys, samples_, read.__getitem__) == 7
    assert find_stored(other, keys, samples_, read.__getitem__) is None  # no candidate


def test_a_fabricated_candidate_is_read_from_its_shard(dataset: Path, tmp_path: Path) -> None:
    files = DatasetFiles(dataset)
    image = files.manifest.schema.names[0]
    stored = StoredDataset(
        index=str(dataset / files.manifest.index.name),
        fields=files.manifest.schema.names,
        image=image,
        shards=tuple(s.name for s in files.manifest.shards),
        root=str(dataset),
    )
    build_dir = tmp_path / BUILD_DIR
    build_dir.mkdir()
    write_table(build_dir, stored)
    new = jpeg_bytes(22, 22, seed=900)
    keys, order = np.load(build_dir / KEYS), np.load(build_dir / SAMPLES)
    keys[order == 3] = content_key(new)  # sample 3's entry now names the new bytes' key
    resorted = np.argsort(keys, kind="stable")
    np.save(build_dir / KEYS, keys[resorted])
    np.save(build_dir / SAMPLES, order[resorted])
    images = StoredImages(stored, build_dir)
    try:
        assert images.find(new) is None  # a candidate, read from its shard: not the same bytes
        third = samples(dataset)[3]
        assert images.find(third[3]) is None  # its own key is gone from the table
        first = samples(dataset)[0]
        assert images.find(first[3]) == first[0]
    finally:
        images.close()


def test_stored_keys_leave_out_absent_members() -> None:
    sizes = np.array([5, 0, 5, 3], dtype=np.uint64)
    crc = np.array([9, 0, 1, 9], dtype=np.uint32)
    present = np.array([True, False, True, True])
    keys, order = stored_keys(sizes, crc, present)
    assert order.tolist() == [3, 2, 0]
    assert keys.tolist() == [(3 << 32) | 9, (5 << 32) | 1, (5 << 32) | 9]


def test_the_command_line_flag(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, _ = _source(tmp_path / "new", dataset)
    args = ["append", str(dataset), str(source), "--workers", "1", "--no-progress"]
    assert main([*args, "--skip-duplicates"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"version 2 of {dataset}: 3 samples added from 6 inputs in ")
    assert "\n3 inputs left out as duplicates (stats.duplicates in the manifest):\n" in out


def _twins_source(root: Path, dataset: Path) -> Path:
    """Slow inputs (240 x 320, one per staged shard): 150 distinct, 30 copies of them in
    between, and 2 copies of stored images."""
    distinct = [jpeg_bytes(240, 320, seed=1000 + i) for i in range(150)]
    names = {f"c{i % 3}/{i:04d}.jpg": data for i, data in enumerate(distinct)}
    names |= {f"c{i % 3}/{i:04d}b.jpg": distinct[i] for i in range(0, 150, 5)}
    names |= {f"c0/stored_{k}.jpg": data for k, data in enumerate(sorted(_small(dataset))[:2])}
    for name, data in names.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    return root


def test_a_killed_append_resumes_to_the_same_duplicates(dataset: Path, tmp_path: Path) -> None:
    clean = Path(shutil.copytree(dataset, tmp_path / "clean"))
    source = _twins_source(tmp_path / "twins", dataset)
    staged = dataset / "versions/000002.partial/shards"
    script = (
        "import sys; from fastpack.compiler import BuildOptions, append; "
        "append(sys.argv[1], sys.argv[2], BuildOptions(workers=2, progress=False), "
        "skip_duplicates=True)"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script, str(dataset), str(source)], start_new_session=True
    )
    wait_for(lambda: len(list(staged.glob("*.tar"))) >= 5, 60, "some staged shards")
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    wait_for(lambda: group_gone(process.pid), 10, "orphaned workers to exit")
    assert not (dataset / "versions/000002").exists(), "it published before the kill"

    with pytest.raises(FastpackError, match="skip_duplicates"):  # the flag must stay
        append(dataset, source, BuildOptions(workers=1, resume=True, **QUIET))
    resumed = append(
        dataset, source, BuildOptions(workers=2, resume=True, **QUIET), skip_duplicates=True
    )
    whole = append(clean, source, BuildOptions(workers=2, **QUIET), skip_duplicates=True)
    assert tree_bytes(dataset) == tree_bytes(clean)
    assert whole.duplicates == resumed.duplicates == 32
    assert whole.added.samples == resumed.added.samples == 150


def _tar(path: Path, samples_: dict[str, bytes]) -> Path:
    """A webdataset tar: each sample's image, class and caption."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tar:
        for k, (key, image) in enumerate(samples_.items()):
            for name, data in (("jpg", image), ("cls", b"%d" % (k % 2)), ("txt", key.encode())):
                info = tarfile.TarInfo(f"{key}.{name}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


def test_members_of_a_webdataset_source(tmp_path: Path) -> None:
    """Inputs read from tar members, in a dataset of several fields (the field encoder's
    path): a stored member's copy and a twin among the new members are left out."""
    old = {f"a{i}": jpeg_bytes(20 + i, 24, seed=i) for i in range(4)}
    _tar(tmp_path / "old/0.tar", old)
    dataset = tmp_path / "ds"
    build(tmp_path / "old", dataset, ONE)
    assert DatasetFiles(dataset).manifest.schema.names == ("jpg", "cls", "txt")
    twin = jpeg_bytes(30, 30, seed=77)
    new = {"b0": old["a2"], "b1": twin, "b2": twin, "b3": jpeg_bytes(22, 22)}
    _tar(tmp_path / "new/0.tar", new)
    summary = append(dataset, tmp_path / "new", ONE, skip_duplicates=True)
    assert (summary.added.samples, summary.duplicates) == (2, 2)
    keys = {s[1]: s[0] for s in samples(dataset)}  # by source: `<tar>/<member key>` or alike
    lines = dict(summary.duplicate_lines)
    assert _ending(lines, "b0") == _ending(keys, "a2")  # a copy of a stored member
    assert _ending(lines, "b2") == _ending(keys, "b1")  # the twin of an earlier new member
    assert sorted(p[-2:] for p in keys)[-2:] == ["b1", "b3"]


def _ending(table: dict[str, str], suffix: str) -> str:
    return next(value for source, value in table.items() if source.endswith(suffix))


def test_a_dataset_without_an_image_field(dataset: Path) -> None:
    manifest = DatasetFiles(dataset).manifest
    fields = tuple(f for f in manifest.schema.fields if f.type != "jpeg")
    textual = dataclasses.replace(
        manifest, version=2, schema=Schema(fields), fields=tuple(f.name for f in fields)
    )
    with pytest.raises(AppendError, match=r"ds: skip_duplicates compares images, .* \(cls\)"):
        image_field(textual, str(dataset))
