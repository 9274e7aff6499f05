"""The `fastpack index` benchmark runs end to end with tiny settings (local disk and the S3
server; sshfs needs tools a test machine may lack and is covered by tests/compiler/adopt),
and its page holds what the JSON holds."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.adopt import adopt_bench


def test_adopt_bench_smoke(tmp_path: Path) -> None:
    out, page = tmp_path / "results.json", tmp_path / "ADOPT.md"
    adopt_bench.main(
        [
            "--samples", "40", "--shards", "2", "--side", "32", "--rounds", "1",
            "--workers", "1", "--crop", "16", "--storages", "local", "s3",
            "--work", str(tmp_path / "work"), "--out", str(out), "--page", str(page),
        ]
    )  # fmt: skip
    report = json.loads(out.read_text())
    assert report["corpus"]["shards"] == 2
    for name in ("local", "s3"):
        (row,) = report["storages"][name]["rounds"]
        assert row["read_s"] > 0
        assert row["index_s"] > 0
        assert row["ratio"] == row["read_s"] / row["index_s"]
    (reading,) = report["reading"]["rounds"]
    assert reading["built_img_s"] > 0
    assert reading["indexed_img_s"] > 0
    text = page.read_text()
    assert f"| local | {report['storages']['local']['rounds'][0]['read_mb_s']:.1f} |" in text
