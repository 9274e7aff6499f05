"""Argument parsing and the error paths that need no dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fastpack.cli import main
from fastpack.sizes import format_size, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4096", 4096),
        ("256MB", 256 * 10**6),
        ("512mb", 512 * 10**6),
        ("1GiB", 2**30),
        ("1.5 KiB", 1536),
        ("2G", 2 * 10**9),
        ("3tib", 3 * 2**40),
    ],
)
def test_parse_size(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "MB", "-1MB", "12XB", "1.2.3", "0", "0.1"])
def test_parse_size_rejects(text: str) -> None:
    with pytest.raises(ValueError, match=f"invalid size {text!r}"):
        parse_size(text)


def test_format_size() -> None:
    assert format_size(512) == "512 B"
    assert format_size(3 * 2**20 + 2**19) == "3.5 MiB"
    assert format_size(5 * 2**40) == "5.0 TiB"


def test_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("build", "info", "verify", "demo"):
        assert command in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("fastpack ")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "the following arguments are required: COMMAND"),
        (["pack"], "invalid choice: 'pack'"),
        (["build", "src"], "the following arguments are required: out"),
        (["build", "s", "o", "--shard-size", "12XB"], "invalid size '12XB'"),
        (["build", "s", "o", "--quality", "101"], "101 is out of range: expected from 1 to 100"),
        (["build", "s", "o", "--workers", "0"], "0 is out of range: expected >= 1"),
        (["build", "s", "o", "--workers", "two"], "invalid integer 'two'"),
        (["build", "s", "o", "--format", "zip"], "invalid choice: 'zip'"),
        (["build", "s", "o", "--check", "pixels"], "invalid choice: 'pixels'"),
        (["verify"], "the following arguments are required: dataset"),
        (["demo", "--images", "0"], "0 is out of range: expected >= 1"),
    ],
)
def test_bad_arguments(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "usage: fastpack" in err
    assert message in err


def error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = err.splitlines()
    assert line.startswith("fastpack: error: ")
    return line


def test_info_on_a_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", str(tmp_path / "nope")]) == 1
    assert (
        error_line(capsys) == f"fastpack: error: {tmp_path / 'nope'}: dataset directory not found"
    )


def test_info_on_a_directory_that_is_not_a_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["info", str(tmp_path)]) == 1
    line = error_line(capsys)
    assert str(tmp_path / "fastpack.json") in line
    assert "not a fastpack dataset" in line


def test_info_on_a_broken_manifest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "fastpack.json").write_text("{")
    assert main(["info", str(tmp_path)]) == 1
    assert f"{tmp_path / 'fastpack.json'}: not valid JSON" in error_line(capsys)


def test_info_on_a_newer_version(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "fastpack.json").write_text(json.dumps({"format": "fastpack", "version": 9}))
    assert main(["info", str(tmp_path)]) == 1
    assert "manifest version 9, this reader supports (1, 2, 3)" in error_line(capsys)
