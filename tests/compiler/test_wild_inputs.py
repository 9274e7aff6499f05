"""No input's content stops a build, none costs more memory than the pixel budget allows, and
the machine's errors that do stop one are named (a dead worker, a full disk)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from fastpack.compiler import BuildError, BuildOptions, OutputError, build
from fastpack.compiler.jobs.shard_record import finished_record
from fastpack.formats import read_manifest
from fastpack.formats.layout import shard_tar_name

from fastpack.cli import main
from tests.compiler._helpers import QUIET
from tests.compiler.test_resume import big_folder, wait_for
from tests.conftest import jpeg_bytes
from tests.reader.image._hostile import HUGE, SMALL_PEAK_MB, huge_claim, run_measured
from tests.reader.image._hostile import unnamed_sampling as key_error_jpeg

KEY_ERROR = "corrupt JPEG: KeyError: 6 (raised by simplejpeg.decode_jpeg_header)"
OVER_HUGE = (
    f"too large: {HUGE} x {HUGE} pixels x 3 components = 3,221,225,472 samples, over the pixel "
    "budget of 268,435,456 (--pixel-budget)"
)


def wild_folder(root: Path) -> Path:
    """Six good JPEGs and, sorting third, one whose frame header simplejpeg cannot name."""
    for i in range(6):
        (root / "a").mkdir(parents=True, exist_ok=True)
        (root / "a" / f"{i:02d}.jpg").write_bytes(jpeg_bytes(40, 48, seed=i))
    (root / "a" / "02_sampling.jpg").write_bytes(key_error_jpeg())
    return root


def rejects(out: Path) -> list[dict[str, str]]:
    lines = (out / "rejects.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_a_frame_header_simplejpeg_cannot_name_is_a_reject_and_the_build_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = wild_folder(tmp_path / "src"), tmp_path / "out"
    assert main(["build", str(source), str(out), "--workers", "2", "--no-progress"]) == 0
    assert "6 samples from 7 inputs" in capsys.readouterr().out
    assert rejects(out) == [{"path": "a/02_sampling.jpg", "reason": KEY_ERROR}]


def test_a_strict_build_names_it_and_a_resume_finishes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, out = wild_folder(tmp_path / "src"), tmp_path / "out"
    args = ["build", str(source), str(out), "--workers", "1", "--shard-size", "1"]
    assert main([*args, "--no-progress", "--strict"]) == 1
    error = capsys.readouterr().err
    assert error == (
        f"fastpack: error: a/02_sampling.jpg: {KEY_ERROR} (a strict build stops at a reject)\n"
    )
    assert finished_record(out, 0) is not None  # an interrupted build, its first shards done
    assert main([*args, "--no-progress", "--resume"]) == 0
    assert rejects(out) == [{"path": "a/02_sampling.jpg", "reason": KEY_ERROR}]
    assert read_manifest(out / "fastpack.json").num_samples == 6


BUILD_IN_A_CHILD = """
import sys
from fastpack.cli import main
print("exit", main(["build", *sys.argv[1:], "--workers", "1", "--no-progress"]))
"""


@pytest.mark.parametrize("check", ["structure", "decode"])
def test_a_1kb_file_claiming_32768_squared_is_rejected_in_little_memory(
    tmp_path: Path, check: str
) -> None:
    """Before the budget, `build --check decode` took 6.4 GB on this file."""
    source, out = tmp_path / "src", tmp_path / "out"
    (source / "a").mkdir(parents=True)
    (source / "a" / "big.jpg").write_bytes(huge_claim())
    (source / "a" / "ok.jpg").write_bytes(jpeg_bytes())
    printed, peak = run_measured(BUILD_IN_A_CHILD, str(source), str(out), "--check", check)
    assert printed.splitlines()[-1] == "exit 0"
    assert rejects(out) == [{"path": "a/big.jpg", "reason": OVER_HUGE}]
    assert peak < SMALL_PEAK_MB, f"peak RSS {peak:.0f} MB"


def test_the_budget_is_an_option_recorded_where_set_and_kept_by_a_resume(tmp_path: Path) -> None:
    source = tmp_path / "src"
    for i, side in enumerate((30, 40, 50)):
        (source / "a").mkdir(parents=True, exist_ok=True)
        (source / "a" / f"{i}.jpg").write_bytes(jpeg_bytes(side, side, seed=i))
    out = tmp_path / "out"
    args = ["build", str(source), str(out), "--workers", "1", "--no-progress"]
    assert main([*args, "--pixel-budget", str(40 * 40 * 3)]) == 0
    manifest = read_manifest(out / "fastpack.json")
    assert manifest.build["pixel_budget"] == 4800
    assert manifest.num_samples == 2
    assert rejects(out) == [
        {
            "path": "a/2.jpg",
            "reason": "too large: 50 x 50 pixels x 3 components = 7,500 samples, over the "
            "pixel budget of 4,800 (--pixel-budget)",
        }
    ]
    default = tmp_path / "default"
    build(source, default, BuildOptions(workers=1, **QUIET))
    assert "pixel_budget" not in read_manifest(default / "fastpack.json").build
    with pytest.raises(BuildError, match=r"cannot resume: .*pixel_budget=4800 \(now None\)"):
        build(source, out, BuildOptions(workers=1, resume=True, **QUIET))
    for bad in (0, -1):
        with pytest.raises(BuildError, match=f"build option pixel_budget={bad}: expected an int"):
            BuildOptions(pixel_budget=bad)


def worker_of(pid: int) -> int:
    """A pool worker of the build process `pid`: a child forked from it (the same command)."""
    command = Path(f"/proc/{pid}/cmdline").read_bytes()
    children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    workers = [int(c) for c in children if _cmdline(int(c)) == command]
    if not workers:
        raise AssertionError(f"no worker among the children {children} of {pid}")
    return workers[0]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return b""


def test_a_killed_worker_is_named_and_a_resume_finishes(tmp_path: Path) -> None:
    source, out = big_folder(tmp_path / "src", 300), tmp_path / "out"
    build_args = [str(source), str(out), "--workers", "2", "--shard-size", "1", "--no-progress"]
    process = subprocess.Popen(
        [sys.executable, "-m", "fastpack", "build", *build_args],
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: len(list((out / "shards").glob("*.tar"))) >= 3, 60, "some finished shards")
    victim = worker_of(process.pid)
    os.kill(victim, signal.SIGKILL)
    _, error = process.communicate(timeout=60)
    assert process.returncode == 1
    assert re.fullmatch(
        rf"fastpack: error: a shard worker process died: process {victim} killed by signal 9 "
        r"\(SIGKILL: on Linux, the kernel's out-of-memory killer sends it\)"
        r"( while writing shard \d+)?(; unfinished shards: [\d, ]+)?; finished shards are "
        r"kept: run the build again with resume to finish it\n",
        error,
    ), error
    assert not (out / "fastpack.json").exists()
    summary = build(source, out, BuildOptions(workers=2, shard_size=1, resume=True, **QUIET))
    assert (summary.samples, summary.shards) == (300, 300)


def test_a_full_disk_is_named_with_the_shard_and_a_resume_finishes(tmp_path: Path) -> None:
    """The shard's temporary file is a link to /dev/full: every write fails with ENOSPC."""
    source = big_folder(tmp_path / "src", 8)
    (source / "c0" / "0003.jpg").write_bytes(b"")  # sorts second: a strict build stops there
    out = tmp_path / "out"
    with pytest.raises(BuildError, match="empty file"):
        build(source, out, BuildOptions(workers=1, shard_size=1, strict=True, **QUIET))
    shard = out / shard_tar_name(1)
    link = shard.with_name(f"{shard.name}.{socket.gethostname()}.{os.getpid()}.tmp")
    link.symlink_to("/dev/full")
    with pytest.raises(OutputError) as refused:
        build(source, out, BuildOptions(workers=1, shard_size=1, resume=True, **QUIET))
    assert str(refused.value) == f"shard 1: {shard}: No space left on device (ENOSPC)"
    assert isinstance(refused.value, OSError)
    assert not link.exists()  # the job removed its temporary file
    summary = build(source, out, BuildOptions(workers=1, shard_size=1, resume=True, **QUIET))
    assert (summary.samples, summary.rejected) == (7, 1)


def test_the_cli_names_a_system_error_instead_of_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = wild_folder(tmp_path / "src")
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"")
    assert main(["build", str(source), str(blocker / "out"), "--no-progress"]) == 1
    assert capsys.readouterr().err == (
        f"fastpack: error: the build stopped: {blocker / 'out' / '.fastpack-build'}: Not a "
        "directory (ENOTDIR); finished shards are kept\n"
    )
