"""Determinism across worker counts, and a build killed with SIGKILL then resumed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from fastpack.compiler import BuildError, BuildOptions, build
from fastpack.compiler.jobs.shard_record import finished_record
from fastpack.formats.layout import shard_tar_name

from tests.compiler._helpers import QUIET, read_dataset, tree_bytes
from tests.compiler.test_rejects import hostile_folder
from tests.conftest import jpeg_bytes


def test_worker_count_does_not_change_a_byte(tmp_path: Path) -> None:
    source = hostile_folder(tmp_path / "src")  # rejects and conversions included
    for i in range(12):
        (source / "b").mkdir(exist_ok=True)
        (source / "b" / f"{i}.jpg").write_bytes(jpeg_bytes(30 + i, 90, seed=i))
    trees = []
    for workers in (1, 2):
        out = tmp_path / f"out{workers}"
        options = BuildOptions(
            workers=workers, shard_size=3000, max_side=64, shuffle_seed=5, **QUIET
        )
        build(source, out, options)
        trees.append(tree_bytes(out))
    assert len(trees[0]) > 8  # several shards
    assert trees[0] == trees[1]


def big_folder(root: Path, files: int) -> Path:
    """Many inputs of a few JPEGs: slow enough per shard to kill a build half-way."""
    images = [jpeg_bytes(240, 320, seed=s) for s in range(6)]
    for i in range(files):
        path = root / f"c{i % 3}" / f"{i:04d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(images[i % len(images)])
    return root


def start_build(source: Path, out: Path, shard_size: int) -> subprocess.Popen[bytes]:
    script = (
        "import sys; from fastpack.compiler import BuildOptions, build; "
        "build(sys.argv[1], sys.argv[2], "
        f"BuildOptions(workers=2, shard_size={shard_size}, progress=False))"
    )
    return subprocess.Popen(
        [sys.executable, "-c", script, str(source), str(out)], start_new_session=True
    )


def wait_for(condition: Callable[[], object], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.002)


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def test_killed_build_resumes_to_the_same_bytes(tmp_path: Path) -> None:
    source = big_folder(tmp_path / "src", 300)
    out, shard_size = tmp_path / "out", 1  # one sample per shard: 300 shard jobs
    process = start_build(source, out, shard_size)
    wait_for(lambda: len(list((out / "shards").glob("*.tar"))) >= 5, 60, "some finished shards")
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    # The orphaned workers notice that the build is gone and exit by themselves.
    wait_for(lambda: group_gone(process.pid), 10, "orphaned workers to exit")
    assert not (out / "fastpack.json").exists(), "the build finished before it was killed"
    kept = {  # finished shards: tar, idx and build records all there
        out / shard_tar_name(s): (out / shard_tar_name(s)).stat().st_ino
        for s in range(300)
        if finished_record(out, s) is not None
    }
    finished = len(kept)
    assert 5 <= finished < 300

    with pytest.raises(BuildError, match="holds an interrupted build; pass --resume"):
        build(source, out, BuildOptions(workers=1, shard_size=shard_size, **QUIET))
    with pytest.raises(BuildError, match=r"cannot resume: .*quality=90 \(now 80\)"):
        build(source, out, BuildOptions(shard_size=shard_size, quality=80, resume=True, **QUIET))
    with pytest.raises(BuildError, match=r"cannot resume: .*shard_size=1 \(now 2\)"):
        build(source, out, BuildOptions(shard_size=2, resume=True, **QUIET))
    assert len(list((out / "shards").glob("*.tar"))) >= finished  # refusals touched nothing

    resumed = build(
        source, out, BuildOptions(workers=1, shard_size=shard_size, resume=True, **QUIET)
    )
    assert {p: p.stat().st_ino for p in kept} == kept  # finished shards were not written again
    clean = tmp_path / "clean"
    build(source, clean, BuildOptions(workers=2, shard_size=shard_size, **QUIET))
    assert tree_bytes(out) == tree_bytes(clean)
    assert (resumed.samples, resumed.shards) == (300, 300)


def interrupted(tmp_path: Path) -> tuple[Path, Path]:
    """A deterministic interrupted build: a strict build that stops at its fifth input."""
    source = big_folder(tmp_path / "src", 12)
    (source / "c0" / "0012.jpg").write_bytes(b"")  # sorts fifth: c0/0000, 0003, 0006, 0009
    out = tmp_path / "out"
    with pytest.raises(BuildError, match=r"c0/0012\.jpg: empty file"):
        build(source, out, BuildOptions(workers=1, shard_size=1, strict=True, **QUIET))
    return source, out


def test_resume_redoes_damaged_or_incomplete_shards(tmp_path: Path) -> None:
    source, out = interrupted(tmp_path)
    assert sorted(p.name for p in (out / "shards").iterdir()) == [
        f"00000{i}.{ext}" for i in range(4) for ext in ("idx", "tar")
    ]
    tar0, idx1 = out / "shards/000000.tar", out / "shards/000001.idx"
    tar0.write_bytes(tar0.read_bytes()[:-512])  # a finished shard cut short: its size is wrong
    idx1.unlink()  # a shard whose job died between its two renames
    build(source, out, BuildOptions(workers=2, shard_size=1, resume=True, **QUIET))
    clean = tmp_path / "clean"
    build(source, clean, BuildOptions(workers=1, shard_size=1, **QUIET))
    assert tree_bytes(out) == tree_bytes(clean)
    assert len(read_dataset(out)) == 12


def test_resume_of_a_finished_dataset(tmp_path: Path) -> None:
    source = big_folder(tmp_path / "src", 4)
    out = tmp_path / "out"
    build(source, out, BuildOptions(workers=1, **QUIET))
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*")}
    with pytest.raises(
        BuildError,
        match="already holds a fastpack dataset; choose an empty directory, or pass --resume",
    ):
        build(source, out, BuildOptions(workers=1, **QUIET))
    summary = build(source, out, BuildOptions(workers=1, resume=True, **QUIET))
    assert (summary.samples, summary.inputs) == (4, 4)
    assert {p: p.stat().st_mtime_ns for p in out.rglob("*")} == before
    with pytest.raises(
        BuildError, match=r"the dataset there was made with max_side=None \(now 50\)"
    ):
        build(source, out, BuildOptions(workers=1, resume=True, max_side=50, **QUIET))
    with pytest.raises(
        BuildError, match=r"the dataset there was made with check='structure' \(now 'decode'\)"
    ):
        build(source, out, BuildOptions(workers=1, resume=True, check="decode", **QUIET))


def test_resume_of_a_dataset_built_before_the_check_option(tmp_path: Path) -> None:
    source = big_folder(tmp_path / "src", 4)
    out = tmp_path / "out"
    build(source, out, BuildOptions(workers=1, check="decode", **QUIET))
    manifest = json.loads((out / "fastpack.json").read_text())
    del manifest["build"]["check"]  # as written before the option existed: every JPEG decoded
    (out / "fastpack.json").write_text(json.dumps(manifest))
    summary = build(source, out, BuildOptions(workers=1, resume=True, check="decode", **QUIET))
    assert summary.samples == 4
    with pytest.raises(
        BuildError, match=r"the dataset there was made with check='decode' \(now 'structure'\)"
    ):
        build(source, out, BuildOptions(workers=1, resume=True, **QUIET))


def test_output_directory_that_is_not_ours(tmp_path: Path) -> None:
    source = big_folder(tmp_path / "src", 2)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    for resume in (False, True):
        with pytest.raises(BuildError, match="busy: is not empty and holds no fastpack build"):
            build(source, busy, BuildOptions(resume=resume, **QUIET))
    assert [p.name for p in busy.iterdir()] == ["notes.txt"]
    (tmp_path / "file").write_text("x")
    with pytest.raises(BuildError, match="file: exists and is not a directory"):
        build(source, tmp_path / "file", BuildOptions(**QUIET))
    with pytest.raises(BuildError, match="must not be inside the source"):
        build(source, source / "out", BuildOptions(**QUIET))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert build(source, empty, BuildOptions(workers=1, **QUIET)).samples == 2


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("workers", 0, "workers=0: expected >= 1 or None"),
        ("shard_size", 0, "shard_size=0: expected >= 1"),
        ("max_side", 0, "max_side=0: expected >= 1 or None"),
        ("quality", 101, "quality=101: expected in 1..100"),
        ("check", "pixels", "check='pixels': expected one of structure, decode"),
    ],
)
def test_bad_options(option: str, value: int | str, message: str) -> None:
    with pytest.raises(BuildError, match=message):
        BuildOptions(**{option: value})  # type: ignore[arg-type]


def test_shuffle_is_a_seeded_permutation(
    make_image_folder: Callable[..., Path], tmp_path: Path
) -> None:
    source = make_image_folder(classes=3, per_class=8)

    def order(name: str, seed: int | None) -> list[tuple[str, int, str, bytes]]:
        options = BuildOptions(workers=1, shard_size=5000, shuffle_seed=seed, **QUIET)
        build(source, tmp_path / name, options)
        return [(s.source, s.label, s.key, s.jpg) for s in read_dataset(tmp_path / name)]

    plain, shuffled, again, other = order("a", None), order("b", 7), order("c", 7), order("d", 8)
    assert [s[2] for s in shuffled] == [s[2] for s in plain]  # keys: plan positions 0..N-1
    assert sorted(shuffled) != shuffled
    assert sorted(s[:2] + s[3:] for s in shuffled) == sorted(s[:2] + s[3:] for s in plain)
    assert [s[0] for s in shuffled] != [s[0] for s in plain]
    assert [s[0] for s in other] != [s[0] for s in shuffled]
    assert again == shuffled
    assert tree_bytes(tmp_path / "b") == tree_bytes(tmp_path / "c")
    for source_path, label, _, _ in shuffled:
        assert label == int(source_path.split("/")[0][-2:])  # labels travel with their images
