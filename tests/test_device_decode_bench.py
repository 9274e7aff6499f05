"""The device-decode benchmark's harness on nvImageCodec's CPU backend: a tiny corpus of real
JPEGs, its JSON sane and its page rendered."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from benchmarks.gpu import device_decode_bench


def test_cpu_backend_run_reports_sane_figures(
    make_image_folder: Callable[..., Path], tmp_path: Path
) -> None:
    corpus = make_image_folder(classes=2, per_class=8, size=256)
    out_json, out_md = tmp_path / "results.json", tmp_path / "DEVICE_DECODE.md"
    device_decode_bench.main(
        [
            *("--corpus", str(corpus), "--workdir", str(tmp_path / "work")),
            *("--device", "cpu", "--batch-size", "4", "--batches", "2", "--workers", "1"),
            *("--epochs", "2", "--out-json", str(out_json), "--out-md", str(out_md)),
        ]
    )
    report = json.loads(out_json.read_text())
    assert set(report["psnr_db"]) == set(device_decode_bench.TRANSFORMS)
    for values in report["psnr_db"].values():
        assert len(values) == 2
        assert all(value > 25 for value in values)  # same crops: only the resampling differs
    epochs = report["alone"]["epochs"]
    assert [e["images"] for e in epochs] == [16, 16]
    assert all(e["device_decode_ms_per_image"] > 0 for e in epochs)
    assert all(e["trainer_cpu_ms_per_image"] > 0 for e in epochs)
    page = out_md.read_text()
    assert "GPU figures pending" in page
    assert "| `RandomResizedCrop(224)` |" in page
