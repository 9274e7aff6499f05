"""Every code block of the README and the guide runs, or says why not (tests/docs/code_blocks.py).

Each page runs in a copy of one scratch directory, as a reader's would look after the first
steps: `photos/`, an ImageFolder tree of real JPEGs (3 classes), and `dataset/`, built from it.
A page that names `s3://my-bucket` runs against the tests' S3 server, its endpoint and
credentials in the environment as users set them, with that bucket made.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fastpack
from benchmarks.figures.history import ROOT
from benchmarks.figures.pages import pages
from tests.conftest import jpeg_bytes
from tests.docs.code_blocks import Block, blocks, problem

CLASSES = ("cat", "dog", "fox")
PER_CLASS = 12
PAGE_TIMEOUT_S = 900
S3_BUCKET = "my-bucket"


def _all_blocks() -> list[Block]:
    return [block for page in pages() for block in blocks(page)]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`photos/` and `dataset/`, made once and copied for each page."""
    root = tmp_path_factory.mktemp("docs")
    for c, name in enumerate(CLASSES):
        folder = root / "photos" / name
        folder.mkdir(parents=True)
        for i in range(PER_CLASS):
            shape = (160 + 16 * (i % 4), 224 + 8 * c)
            (folder / f"{i:03d}.jpg").write_bytes(jpeg_bytes(*shape, seed=100 * c + i))
    options = fastpack.BuildOptions(workers=1, progress=False)
    fastpack.build(root / "photos", root / "dataset", options)
    return root


def test_every_block_runs_or_says_why() -> None:
    problems = [p for p in map(problem, _all_blocks()) if p is not None]
    assert not problems, "\n".join(problems)


def test_the_guide_has_blocks_that_run() -> None:
    running = [block for block in _all_blocks() if block.runs]
    assert len({block.page for block in running}) >= 2, "no page of the guide runs its code"


def test_a_block_left_to_ci_is_in_ci() -> None:
    ci = (ROOT / ".ci" / "run").read_text("utf-8")
    for block in _all_blocks():
        if block.not_run == ".ci/run runs it":
            for command in filter(None, map(str.strip, block.text.splitlines())):
                assert command in ci, f"{block.where}: .ci/run does not run {command!r}"


@pytest.mark.parametrize(
    "page",
    [p for p in pages() if any(b.runs or b.file for b in blocks(p))],
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_page_runs(
    page: Path, scratch: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    where = tmp_path / "page"
    shutil.copytree(scratch, where)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if f"s3://{S3_BUCKET}" in page.read_text("utf-8"):
        server = request.getfixturevalue("s3_env")
        bucket = server.filesystem()
        if not bucket.exists(S3_BUCKET):
            bucket.mkdir(S3_BUCKET)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}  # with the server's variables now
    done = subprocess.run(
        [sys.executable, "-m", "tests.docs._run_page", str(page), str(where)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=PAGE_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-6000:]
