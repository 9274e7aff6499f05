"""`fastpack append` on the command line, in-process."""

from __future__ import annotations

from pathlib import Path

import pytest

from fastpack.cli import main


def test_append_prints_the_version_it_published(
    dataset: Path, new_inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["append", str(dataset), str(new_inputs), "--workers", "1", "--no-progress"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith(f"version 2 of {dataset}: 6 samples added from 6 inputs in ")
    assert "the dataset now holds 15 samples in " in out
    code = main(["append", str(dataset), str(new_inputs), "--no-progress", "--resume"])
    _, err = capsys.readouterr()
    assert code == 1
    assert err.strip() == (
        f"fastpack: error: {dataset}/versions/000003.partial: no interrupted append of "
        "version 3 to resume; append without --resume"
    )


def test_append_takes_no_shaping_option(
    dataset: Path, new_inputs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["append", str(dataset), str(new_inputs), "--shard-size", "1KiB"]) == 2
    assert "unrecognized arguments: --shard-size" in capsys.readouterr().err
