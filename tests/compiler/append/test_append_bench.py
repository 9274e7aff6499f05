"""benchmarks/append/append_bench.py at a tiny size: it builds, appends, finds no byte of the
build rewritten, opens every version, and renders its page."""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.append.append_bench import measure, render


def test_the_append_benchmark_runs(tmp_path: Path) -> None:
    args = argparse.Namespace(
        samples=600, fraction=0.05, rounds=2, build_rounds=1, workers=1, images=50, classes=5,
        workdir=str(tmp_path), skip_rounds=1,
    )  # fmt: skip
    results = measure(args)
    assert [a["version"] for a in results["appends"]] == [2, 3]
    assert results["appends"][-1]["samples"] == 660
    assert results["bytes_rewritten"] == 0
    assert results["files_before"] == 3  # one shard, its DALI index, the index
    copies, fresh = results["skip_appends"]
    assert (copies["version"], copies["duplicates"], copies["samples_added"]) == (4, 30, 0)
    assert (fresh["version"], fresh["duplicates"], fresh["samples_added"]) == (5, 0, 30)
    assert fresh["samples"] == 690
    assert sorted(results["open_versions"]) == ["1", "2", "3", "4", "5"]
    assert results["open_versions"]["1"]["samples"] == results["open_plain"]["samples"] == 600
    page = render(results)
    assert "| version 5 (latest) | 690 |" in page
    assert "Bytes of the build's files rewritten by the 4 appends: **0** of" in page
    assert "| copies of stored images | 4 | 30 | 0 |" in page
    assert "| new images | 5 | 0 | 30 |" in page
