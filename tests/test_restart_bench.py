"""The `--restart-markers` benchmark runs end to end with tiny settings: every transcode's crops
equal the stored files', the decoder leaves rows and columns out where the markers allow, and
the page holds what the JSON holds."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from fastpack.compiler.images.baseline import baseline_available

from benchmarks.readers import restart_bench


@pytest.mark.skipif(not baseline_available(), reason="the transcoder is not built here")
def test_restart_bench_smoke(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    for c in range(2):
        folder = tmp_path / "corpus" / f"class_{c}"
        folder.mkdir(parents=True)
        for i in range(4):
            noise = rng.integers(0, 255, (384, 512, 3), np.uint8)  # 32 MCUs a row
            image = cv2.GaussianBlur(noise, (9, 9), 0)
            cv2.imwrite(str(folder / f"{i}.jpg"), image, [cv2.IMWRITE_JPEG_QUALITY, 90])
    out, page = tmp_path / "restart.json", tmp_path / "RESTART.md"
    restart_bench.main(
        [
            "--corpus", str(tmp_path / "corpus"), "--images", "8", "--widths", "64,65535",
            "--rounds", "1", "--build-rounds", "1", "--cpu", "0",
            "--out", str(page), "--json", str(out),
        ]
    )  # fmt: skip
    raw = json.loads(out.read_text())
    assert raw["images"] == 8
    assert set(raw["bytes"]) == {
        "stored",
        "transcoded, no markers",
        "intervals of <= 64 px",
        "markers every MCU row",
    }
    assert all(value == "8/8" for value in raw["checks"].values()), raw["checks"]
    rows, columns = raw["region_start"]["intervals of <= 64 px"]
    assert rows > 0
    assert columns > 0
    assert raw["region_start"]["markers every MCU row"][1] == 0
    assert raw["region_start"]["stored"] == [0, 0]
    text = page.read_text()
    for kind in raw["bytes"]:
        assert f"| {kind} |" in text
