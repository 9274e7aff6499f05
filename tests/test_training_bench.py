"""The training benchmark's harness on CPU: the small model, a tiny corpus of real JPEGs, one
round of the data-on-device and fastpack loaders (the nvImageCodec one on its CPU backend) in
fresh processes, both cases; its JSON is
sane and its page renders."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from benchmarks.training import train_bench
from benchmarks.training._page import run_figures, summarize

LOADERS = ("on-device", "fastpack", "fastpack-nvimgcodec", "imagefolder")


def test_cpu_run_reports_sane_figures(
    make_image_folder: Callable[..., Path], tmp_path: Path
) -> None:
    corpus = make_image_folder(classes=3, per_class=8, size=96)
    out_json, out_md = tmp_path / "results.json", tmp_path / "TRAINING.md"
    train_bench.main(
        [
            *("--corpus", str(corpus), "--workdir", str(tmp_path / "work")),
            *("--models", "small", "--loaders", ",".join(LOADERS), "--rounds", "1"),
            *("--batch-size", "4", "--workers", "1", "--epochs", "2"),
            *("--short-images", "8", "--short-epochs", "3"),
            *("--out-json", str(out_json), "--out-md", str(out_md)),
        ]
    )
    report = json.loads(out_json.read_text())
    ran = {run["loader"] for run in report["runs"]}
    assert ran | set(report["unavailable"]) == set(LOADERS)
    assert {"on-device", "fastpack", "fastpack-nvimgcodec"} <= ran
    assert len(report["runs"]) == 2 * len(ran)  # long and short, one round
    for run in report["runs"]:
        assert run["error"] == "", run["error"]
        result = run["result"]
        assert len(result["epochs"]) == (2 if run["case"] == "long" else 3)
        for epoch in result["epochs"]:
            assert epoch["images"] == (24 if run["case"] == "long" else 8)
            assert 0 <= epoch["wait_share"] <= 1
            assert epoch["batches"] == len(epoch["waits_s"])
        figures = run_figures(run)
        assert figures["images_per_s"] is not None
        assert figures["images_per_s"] > 0
        assert run["peak_pss_mib"] > 0
        if run["loader"] in ("fastpack", "fastpack-nvimgcodec"):
            assert figures["stats_disagreement"] is not None
            for epoch in result["epochs"]:  # the loop's timer and stats() agree
                loop, stats = epoch["wait_share"], epoch["stats"]["wait_share"]
                # the nvImageCodec loader decodes in the trainer here (its CPU backend): its
                # wait is a large share, which a few ms of these tiny epochs move further
                assert abs(loop - stats) < 0.05 + 0.1 * loop, (loop, stats)
            assert all(e["stats"]["samples"] == e["images"] for e in result["epochs"])
        else:
            assert figures["stats_disagreement"] is None  # the resident batch has no stats
    assert summarize(report)[("small", "short", "fastpack")]["rounds"] == 1
    page = out_md.read_text()
    assert "GPU figures pending" in page
    assert "## small, short epochs" in page
    assert "| fastpack | " in page
