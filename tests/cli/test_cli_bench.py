"""`fastpack bench` on the CLI tests' tiny dataset (a few batches, at most one worker), by path
and by URL on a real S3 server."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from fastpack.formats import MANIFEST_NAME
from fastpack.reader import StreamingDataset
from fastpack.reader.image import decoder
from fastpack.storage import CACHE_ENV

from fastpack.bench import LOADERS
from fastpack.cli import main

from .conftest import CLASSES, PER_CLASS, Run

QUICK = ["--batch-size", "4", "--size", "32", "--batches", "2", "--passes", "1", "--seconds", "5"]
ROW = re.compile(r"^(map-style|streaming|dali-cpu) +([\d,]+) +([\d.]+) s +(\d+)% +(\d+)%")
DALI = (
    importlib.util.find_spec("nvidia") is not None
    and importlib.util.find_spec("nvidia.dali") is not None
)


def rows(out: str) -> dict[str, str]:
    """The table's rows by loader name."""
    return {line.split()[0]: line for line in out.splitlines() if line.startswith(LOADERS)}


def test_bench_prints_a_row_per_loader_and_a_verdict(built: tuple[Path, Path], run: Run) -> None:
    _, dataset = built
    code, out, err = run("bench", dataset, *QUICK, "--workers", "0")
    assert code == 0, err
    assert out.startswith(
        f"fastpack bench {dataset}: {len(CLASSES) * PER_CLASS} samples in 1 shard"
    )
    assert re.search(r"^decode ceiling: [\d,]+ images/s in 1 process \(", out, re.M)
    assert f"\ndecoder: {decoder()}\n" in out
    table = rows(out)
    assert set(table) == set(LOADERS)
    for name in ("map-style", "streaming"):
        assert ROW.match(table[name]), table[name]
    verdict = re.search(r"^verdict: use (map-style|streaming|dali-cpu)( over)?", out, re.M)
    assert verdict, out
    assert "an epoch is only 4 batches" in out
    assert "bench: map-style: 1 passes after a warm-up" in err


def test_bench_json_gives_the_fields(built: tuple[Path, Path], run: Run) -> None:
    _, dataset = built
    code, out, err = run(
        "bench",
        dataset,
        *QUICK,
        "--workers",
        "1",
        "--json",
        "--only",
        "map-style,streaming",
        "--step-ms",
        "1",
    )
    assert code == 0, err
    report: dict[str, Any] = json.loads(out)
    assert (report["path"], report["samples"], report["workers"]) == (str(dataset), 15, 1)
    assert (report["batch_size"], report["size"], report["step_ms"]) == (4, 32, 1.0)
    assert report["ceiling"]["processes"] == 1
    assert report["decoder"] == str(decoder())
    assert report["ceiling"]["images_per_second"] > 0
    assert report["ceiling"]["payloads"] == 15
    assert [loader["name"] for loader in report["loaders"]] == ["map-style", "streaming"]
    for loader in report["loaders"]:
        assert loader["skipped"] is None
        assert loader["images_per_second"] > 0
        assert loader["first_batch_seconds"] > 0
        assert 0 <= loader["wait_share"] <= 1
        ceiling = report["ceiling"]["images_per_second"]
        assert loader["of_ceiling"] == pytest.approx(loader["images_per_second"] / ceiling)
        assert len(loader["pass_rates"]) == 1
    assert report["verdict"]["use"] in ("map-style", "streaming")
    assert report["verdict"]["bottleneck"] in ("trainer", "decode", "loader")
    assert report["verdict"]["lines"]


def test_bench_center_crop_reads_every_loader_with_it(built: tuple[Path, Path], run: Run) -> None:
    _, dataset = built
    code, out, err = run(
        "bench",
        dataset,
        *QUICK,
        "--workers",
        "0",
        "--transform",
        "center-crop",
        "--only",
        "streaming",
        "--json",
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["transform"] == "center-crop"
    assert report["loaders"][0]["images_per_second"] > 0


def test_a_bad_path_is_named(tmp_path: Path, run: Run) -> None:
    missing = tmp_path / "no-such-dataset"
    code, out, err = run("bench", missing, *QUICK)
    assert (code, out) == (1, "")
    assert err.splitlines()[-1] == (
        f"fastpack: error: {missing}/{MANIFEST_NAME}: no manifest; not a fastpack dataset (or "
        "its build has not finished)"
    )


@pytest.mark.parametrize("only", ["gpu", "map-style,dali", ""])
def test_unknown_loaders_are_refused(built: tuple[Path, Path], run: Run, only: str) -> None:
    code, _, err = run("bench", built[1], "--only", only)
    assert code == 2
    assert "expected a comma-separated list of map-style, streaming, dali-cpu" in err


def test_dali_row_says_not_installed(
    built: tuple[Path, Path], run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "nvidia.dali", None)  # `import nvidia.dali` now fails
    code, out, err = run("bench", built[1], *QUICK, "--workers", "0", "--only", "dali-cpu")
    assert code == 0, err
    assert re.search(
        r"^dali-cpu +- +- +- +- +not installed \(pip install 'fastpack\[dali\]'\)$", out, re.M
    ), out
    assert "verdict: no loader was measured (dali-cpu: not installed" in out


def test_without_torch_only_the_ceiling_runs(
    built: tuple[Path, Path], run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now fails
    code, out, err = run("bench", built[1], *QUICK, "--workers", "0")
    assert code == 0, err
    assert re.search(r"^decode ceiling: [\d,]+ images/s", out, re.M)
    for name in LOADERS:
        assert rows(out)[name].endswith("PyTorch is not installed (pip install 'fastpack[torch]')")
    assert "verdict: no loader was measured (map-style: PyTorch is not installed" in out


@pytest.mark.skipif(not DALI, reason="DALI is not installed")
def test_dali_row_runs_on_the_cpu(built: tuple[Path, Path], run: Run) -> None:
    code, out, err = run("bench", built[1], *QUICK, "--workers", "0", "--only", "dali-cpu")
    assert code == 0, err
    row = rows(out)["dali-cpu"]
    assert ROW.match(row), row
    assert row.endswith("1 DALI thread")


@pytest.mark.usefixtures("s3_env")
def test_bench_a_url(
    built: tuple[Path, Path],
    s3_bucket: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Not cached: streaming from the URL only; once an epoch was streamed, the local copy too."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    url = f"s3://{s3_bucket}/ds"
    build = ["build", str(built[0]), url, "--workers", "1", "--no-progress", "--shard-size", "4KB"]
    assert main([*build, "--staging", str(tmp_path / "staging")]) == 0
    capsys.readouterr()

    assert main(["bench", url, *QUICK, "--workers", "0", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    loaders = {loader["name"]: loader for loader in report["loaders"]}
    assert report["path"] == url
    assert report["shards"] > 1
    assert "shards in the local cache" in loaders["map-style"]["skipped"]
    assert loaders["streaming"]["images_per_second"] > 0
    assert loaders["streaming"]["note"].startswith("from the URL into a new cache")
    assert loaders["dali-cpu"]["skipped"].startswith("DALI reads local shards")
    assert report["verdict"]["use"] == "streaming"
    bench_caches = [p.name for p in (tmp_path / "cache").iterdir() if p.name.startswith("bench-")]
    assert bench_caches == []  # the bench's own cache is removed

    with StreamingDataset(url) as stream:  # one epoch fills the cache
        assert sum(1 for _ in stream) == len(CLASSES) * PER_CLASS
    assert main(["bench", url, *QUICK, "--workers", "0", "--only", "map-style,streaming"]) == 0
    out = capsys.readouterr().out
    table = rows(out)
    assert ROW.match(table["map-style"]), table["map-style"]
    assert "over the local copy" in table["map-style"]
    assert ROW.match(table["streaming"]), table["streaming"]
    assert re.search(r"^verdict: use (map-style over the local copy|streaming):", out, re.M)
