"""A worker's peak memory for the largest images the default pixel budget allows, progressive
(the worst case: libjpeg keeps 2 bytes per sample for the coefficients of the whole image).

Images, each at the budget (2**28 samples = width x height x components):

- `color 4:4:4`: 9459 x 9459 x 3, progressive, full-resolution chroma (the most coefficients);
- `color 4:2:0`: 9459 x 9459 x 3, progressive, the usual chroma subsampling;
- `gray`: 16384 x 16384 x 1, progressive (a build converts it to RGB at full size).

Each measurement runs in a fresh process (`_pixel_budget_run`) and reports that process's peak RSS
(`VmHWM`): `fastpack build --workers 1` on a folder of the one image (as one build worker sees it,
with each check), `Dataset[i]` with `RandomResizedCrop(224)`, `CenterCrop(224)` and no transform
(window decoder and simplejpeg fallback), and `verify --decode`. The floor is a process that only
imports fastpack, OpenCV and simplejpeg.

    python -m benchmarks.readers.pixel_budget_bench --workdir /tmp/budget \\
        --out benchmarks/readers/PIXEL_BUDGET.md --json benchmarks/readers/pixel_budget_results.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from fastpack.formats.image_header import DEFAULT_PIXEL_BUDGET

from benchmarks.launch import REPO, run_step
from benchmarks.sysinfo import fastpack_commit, load, machine, versions

STEP = "readers._pixel_budget_run"
SIDE_COLOR, SIDE_GRAY = 9459, 16384  # the largest squares within 2**28 samples
IMAGES = {
    "color 4:4:4": (SIDE_COLOR, 3, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_444),
    "color 4:2:0": (SIDE_COLOR, 3, cv2.IMWRITE_JPEG_SAMPLING_FACTOR_420),
    "gray": (SIDE_GRAY, 1, None),
}
BUILDS = {
    "build (structure check)": [],
    "build --check decode": ["--check", "decode"],
    "build --baseline": ["--baseline"],
    "build --max-side 1024": ["--max-side", "1024"],
}
READS = [
    ("Dataset[i] RandomResizedCrop(224), window decoder", "rrc", "window"),
    ("Dataset[i] RandomResizedCrop(224), simplejpeg fallback", "rrc", "simplejpeg"),
    ("Dataset[i] CenterCrop(224), window decoder", "center", "window"),
    ("Dataset[i] no transform (full decode)", "full", "window"),
]
TIMEOUT = 900.0


def photo(side: int, seed: int) -> np.ndarray:
    """Gradients under noise, `side` x `side` x 3 (BGR): every coefficient band has data."""
    rng = np.random.default_rng(seed)
    ramp = np.linspace(0, 255, side, dtype=np.float32)
    image = np.empty((side, side, 3), np.uint8)
    for c in range(3):
        row = (ramp * (0.4 + 0.2 * c) + 40 * c) % 256
        noise = rng.integers(-24, 24, (side, side), dtype=np.int16)
        image[..., c] = np.clip(row[None, :] * 0.5 + row[:, None] * 0.5 + noise, 0, 255)
    return image


def write_image(path: Path, side: int, components: int, sampling: int | None) -> int:
    bgr = photo(side, components)
    pixels = cv2.cvtColor(bgr, cv2.COLOR_BGR2GRAY) if components == 1 else bgr
    params = [cv2.IMWRITE_JPEG_PROGRESSIVE, 1, cv2.IMWRITE_JPEG_QUALITY, 90]
    if sampling is not None:
        params += [cv2.IMWRITE_JPEG_SAMPLING_FACTOR, sampling]
    ok, data = cv2.imencode(".jpg", pixels, params)
    if not ok:
        raise RuntimeError(f"OpenCV could not encode {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.tobytes())
    return len(data)


def measure(args: list[str], work: Path, name: str) -> dict[str, Any]:
    outcome = run_step(STEP, args, work / "logs" / f"{name}.log", TIMEOUT, memory=False)
    if outcome.result is None:
        return {"error": outcome.error}
    return outcome.result


def run(work: Path) -> dict[str, Any]:
    shutil.rmtree(work, ignore_errors=True)
    images: dict[str, Any] = {}
    for k, (name, (side, components, sampling)) in enumerate(IMAGES.items()):
        path = work / f"src{k}" / "a" / "image.jpg"
        images[name] = {
            "source": str(path.parent.parent),
            "height": side,
            "width": side,
            "components": components,
            "samples": side * side * components,
            "bytes": write_image(path, side, components, sampling),
        }
    rows: list[dict[str, Any]] = [{"what": "imports only", **measure(["imports"], work, "floor")}]
    for k, (name, image) in enumerate(images.items()):
        for build, flags in BUILDS.items():
            out = work / f"out{k}-{len(rows)}"
            result = measure(["build", image["source"], str(out), *flags], work, f"b{len(rows)}")
            rows.append({"what": build, "image": name, **result})
            shutil.rmtree(out, ignore_errors=True)
    dataset = work / "dataset"  # the two color images, stored as they are (progressive)
    both = work / "both"
    for k in (0, 1):
        target = both / "a" / f"{k}.jpg"
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(Path(images[list(IMAGES)[k]]["source"]) / "a" / "image.jpg", target)
    rows.append(
        {"what": "build of the dataset", **measure(["build", str(both), str(dataset)], work, "ds")}
    )
    for k, name in enumerate(list(IMAGES)[:2]):
        for what, transform, decoder in READS:
            result = measure(
                ["read", str(dataset), str(k), transform, decoder], work, f"r{len(rows)}"
            )
            rows.append({"what": what, "image": name, **result})
    rows.append(
        {"what": "verify --decode (both images)", **measure(["verify", str(dataset)], work, "v")}
    )
    return {"images": images, "rows": rows}


def page(results: dict[str, Any]) -> str:
    info = results["info"]
    lines = [
        "# A worker's peak memory at the pixel budget",
        "",
        "Produced by `python -m benchmarks.readers.pixel_budget_bench` (its docstring says what "
        "each row runs); raw numbers: `pixel_budget_results.json`.",
        "",
        f"- Date: {info['date']}; fastpack commit {info['commit']}",
        f"- Machine: {info['machine']['cpu']}, {info['machine']['cores']} cores, "
        f"{info['machine']['ram_gib']} GiB; Python {info['machine']['python']}; load "
        f"{info['load_before']} before, {info['load_after']} after",
        "- Versions: "
        + ", ".join(f"{k} {v}" for k, v in info["versions"].items() if v != "not installed"),
        f"- Pixel budget: {DEFAULT_PIXEL_BUDGET:,} samples (the default)",
        "",
        "| image | size | components | samples | file |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, image in results["images"].items():
        lines.append(
            f"| {name} | {image['width']} x {image['height']} | {image['components']} | "
            f"{image['samples']:,} | {image['bytes'] / 1e6:.1f} MB |"
        )
    lines += [
        "",
        "| process | image | peak RSS (MiB) | seconds | outcome |",
        "|---|---|---:|---:|---|",
    ]
    for row in results["rows"]:
        outcome = row.get("error") or _outcome(row)
        lines.append(
            f"| {row['what']} | {row.get('image', '')} | {row.get('peak_mib', '')} | "
            f"{row.get('seconds', '')} | {outcome} |"
        )
    return "\n".join(lines) + "\n"


def _outcome(row: dict[str, Any]) -> str:
    if "exit" in row:
        stats = row.get("stats", {})
        notes = [
            f"{stats[k]} {k}" for k in ("converted", "rejected", "not_transcoded") if stats.get(k)
        ]
        return f"exit {row['exit']}" + (f": {', '.join(notes)}" if notes else "")
    if "shape" in row:
        return "x".join(map(str, row["shape"]))
    if "ok" in row:
        return "ok" if row["ok"] else f"{len(row['problems'])} problems"
    return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/pixel-budget-bench"))
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/readers/PIXEL_BUDGET.md")
    parser.add_argument(
        "--json", type=Path, default=REPO / "benchmarks/readers/pixel_budget_results.json"
    )
    args = parser.parse_args()
    before = load()
    results = run(args.workdir)
    results["info"] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "commit": fastpack_commit(REPO),
        "machine": machine(),
        "versions": versions(("fastpack", "numpy", "simplejpeg", "opencv-python-headless")),
        "load_before": before,
        "load_after": load(),
        "pixel_budget": DEFAULT_PIXEL_BUDGET,
    }
    args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    args.out.write_text(page(results), encoding="utf-8")
    print(page(results))


if __name__ == "__main__":
    main()
