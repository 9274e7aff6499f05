"""The views benchmark at a tiny size: its synthetic dataset is valid, every case runs."""

from __future__ import annotations

import json
from pathlib import Path

from fastpack.formats import DatasetFiles

from benchmarks.startup import view_bench


def test_view_bench_runs_and_reports(tmp_path: Path) -> None:
    out, raw = tmp_path / "VIEWS.md", tmp_path / "views.json"
    argv = ["--samples", "23456", "--runs", "1", "--workdir", str(tmp_path / "w")]
    assert view_bench.main([*argv, "--out", str(out), "--json", str(raw)]) == 0
    files = DatasetFiles(tmp_path / "w" / "dataset")
    assert len(files) == 23456
    assert (
        files.index.source(12345)
        == f"n{files.index.label[12345]:08d}/n{files.index.label[12345]:08d}_000012345.JPEG"
    )
    report = json.loads(raw.read_text())
    cases = {row["case"]: row for row in report["results"]}
    assert set(view_bench.CASES) < set(cases)
    suffix = cases["where suffix `*5.JPEG`"]["rows"]
    baseline = next(row for name, row in cases.items() if name.startswith("baseline"))
    assert suffix == baseline["rows"] == [23456 // 10 + (23456 % 10 > 5)]
    assert "**met**" in out.read_text()
