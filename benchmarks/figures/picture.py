"""The README's picture: the loaders side by side, and how long a trainer waits on each.

The PNG carries a digest of the numbers it plots (a `tEXt` chunk), so a test can tell whether it
still shows what the JSON holds without drawing it again (matplotlib, the `figures` extra, is
needed only to draw).
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
from pathlib import Path
from typing import Any

from benchmarks.figures import readers, training

DIGEST_KEY = "fastpack-figure-data"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_MARKUP = re.compile(r"\*\*|`")
# Without a GPU, loader="nvimgcodec" decodes in the training process by design: its wait there
# is the decode, not a wait a GPU machine would see (the benchmarks page shows it).
LEFT_OUT_OF_WAITS = frozenset({"fastpack-nvimgcodec"})


def plotted(reader_report: dict[str, Any], training_report: dict[str, Any]) -> dict[str, Any]:
    """Exactly the numbers the picture shows, rounded as drawn."""
    speed = [
        [_MARKUP.sub("", readers.label(r.peer, reader_report)), round(r.ratio, 3)]
        for r in readers.rows(reader_report)
    ]
    waits = [
        [_MARKUP.sub("", training.LABELS.get(loader, loader)), round(share, 4)]
        for loader, share in sorted(training.wait_shares(training_report).items())
        if loader not in LEFT_OUT_OF_WAITS
    ]
    return {"speed": speed, "waits": waits}


def digest(data: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()


def embedded_digest(png: Path) -> str | None:
    """The digest a PNG written by `draw` carries, or None."""
    data = png.read_bytes()
    if not data.startswith(_PNG_SIGNATURE):
        raise ValueError(f"{png}: not a PNG file")
    at = len(_PNG_SIGNATURE)
    while at + 8 <= len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\0")
            if key.decode("latin-1") == DIGEST_KEY:
                return value.decode("latin-1")
        at += 12 + length
    return None


def shows(png: Path, data: dict[str, Any]) -> bool:
    """Whether `png` exists and was drawn from exactly `data`."""
    return png.exists() and embedded_digest(png) == digest(data)


def draw(data: dict[str, Any], out: Path, caption: str) -> None:
    """Two panels: images/s over the fastest peer; the trainer's wait share, long epochs."""
    import matplotlib  # noqa: PLC0415 -- optional: matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415 -- optional: matplotlib

    speed = list(reversed(data["speed"]))
    waits = sorted(data["waits"], key=lambda item: -item[1])
    figure, (left, right) = plt.subplots(
        1, 2, figsize=(13, 5.2), width_ratios=[3, 2], layout="constrained"
    )
    colours = ["#1f77b4" if name.startswith("fastpack") else "#9e9e9e" for name, _ in speed]
    left.barh([name for name, _ in speed], [ratio for _, ratio in speed], color=colours)
    left.axvline(1.0, color="black", linewidth=0.8)
    left.set_xlabel("images/s, x the fastest other loader (higher is better)")
    left.set_title("Loaders side by side: RandomResizedCrop 224 batches")
    left.set_xlim(0, max(ratio for _, ratio in speed) * 1.15)
    for y, (_, ratio) in enumerate(speed):
        left.text(ratio + 0.02, y, f"{ratio:.2f}x", va="center", fontsize=8)
    colours = ["#1f77b4" if name.startswith("fastpack") else "#9e9e9e" for name, _ in waits]
    right.barh([name for name, _ in waits], [share * 100 for _, share in waits], color=colours)
    right.set_xlabel("% of loop time spent waiting (lower is better)")
    right.set_title("A training loop waiting for data")
    for y, (_, share) in enumerate(waits):
        right.text(share * 100, y, f" {share * 100:.1f}%", va="center", fontsize=8)
    right.set_xlim(0, max(10.0, max((share * 100 for _, share in waits), default=0) * 1.3))
    figure.supxlabel(caption, fontsize=7, color="#555555")
    out.parent.mkdir(parents=True, exist_ok=True)
    metadata = {DIGEST_KEY: digest(data), "Software": None}
    figure.savefig(out, dpi=110, bbox_inches="tight", pad_inches=0.2, metadata=metadata)
    plt.close(figure)
