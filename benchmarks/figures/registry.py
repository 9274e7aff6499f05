"""Every figure the pages hold: its raw JSON, how it renders, and the code it measures."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.figures import builds, picture, readers, shared_fs, startup, streaming, training
from benchmarks.figures.history import ROOT, commits_between
from benchmarks.figures.provenance import load_json, provenance

# The code a CPU figure measures: a commit that changes any of it counts towards its age.
CODE = (
    "compiler",
    "reader",
    "formats",
    "storage",
    "fastpack",
    "csrc",
    "setup.py",
    "pyproject.toml",
)
READER_JSON = "benchmarks/readers/reader_results.json"
READER_LARGE_JSON = "benchmarks/readers/reader_results_1600.json"
STARTUP_JSON = "benchmarks/startup/startup_results.json"
BUILD_JSON = "benchmarks/builds/build_compare_results.json"
SHARED_FS_JSON = "benchmarks/streaming/shared_fs_results.json"
STREAM_JSON = "benchmarks/streaming/stream_results.json"
TRAINING_JSON = "benchmarks/training/training_results.json"
GPU_JSON = "benchmarks/gpu/gpu_results.json"
PICTURE = "docs/img/loaders.png"


@dataclass(frozen=True)
class Figure:
    name: str
    sources: tuple[str, ...]  # raw JSON, relative to the repository's root
    render: Callable[[Path], str]  # the block's text on a page in this folder
    measures: tuple[str, ...]  # paths whose changes age it
    gpu: bool = False  # measured on a machine lent now and then: its age is said, not limited


def _link(target: str, page_dir: Path) -> str:
    return Path(os.path.relpath(ROOT / target, page_dir)).as_posix()


def _report(source: str) -> dict[str, Any]:
    return load_json(ROOT / source)


def _picture_caption() -> str:
    reader, train = provenance(_report(READER_JSON)), provenance(_report(TRAINING_JSON))
    return (
        f"Left: {READER_JSON}, commit {reader.commit}, {reader.date}. Right: {TRAINING_JSON}, "
        f"commit {train.commit}, {train.date}. {reader.machine}."
    )


def picture_data() -> dict[str, Any]:
    return picture.plotted(_report(READER_JSON), _report(TRAINING_JSON))


def draw_picture() -> None:
    picture.draw(picture_data(), ROOT / PICTURE, _picture_caption())


def _picture_block(page_dir: Path) -> str:
    alt = (
        "fastpack and other loaders: images/s relative to the fastest other loader, and wait share"
    )
    return f"![{alt}]({_link(PICTURE, page_dir)})\n"


def _gpu_block(page_dir: Path) -> str:
    report = _report(GPU_JSON)
    p = provenance(report)
    newest = provenance(_report(READER_JSON)).commit
    behind = commits_between(p.commit, newest)
    lines = [
        "| `make_dali_loader`, batch 256, normalized float32 | on the GPU (nvJPEG), images/s | "
        "DALI on the CPU, images/s |",
        "|---|---:|---:|",
    ]
    for kind, name in (("train", "training: RandomResizedCrop + flip"), ("eval", "evaluation")):
        gpu, cpu = report[f"{kind}_gpu"], report[f"{kind}_cpu"]
        lines.append(
            f"| {name} | {gpu['images_per_s_median']:,.0f} ({gpu['range'][0]:,.0f}-"
            f"{gpu['range'][1]:,.0f}) | {cpu['images_per_s_median']:,.0f} "
            f"({cpu['range'][0]:,.0f}-{cpu['range'][1]:,.0f}) |"
        )
    c = report["corpus"]
    return (
        "\n".join(lines) + "\n\n**A GPU figure, older than the others**: "
        f"{report['gpu']['nvidia_smi'].split(',')[0]}, "
        f"{p.machine}, DALI {report['gpu']['dali']} for CUDA 13; commit `{p.commit}`, {p.date}: "
        f"{behind} commits before `{newest}`, the commit of the loaders side by side above. "
        f"{c['images']:,} photos of {c['mean_kb']:.0f} KB; medians of "
        f"{report['train_gpu']['epochs']} epochs, with their range. "
        f"Raw: [{Path(GPU_JSON).name}]({_link(GPU_JSON, page_dir)}).\n"
    )


def _table(name: str, source: str, table: Callable[[dict[str, Any], str], str]) -> Figure:
    """A figure that is one JSON's table: `table(report, link to the JSON)`; it ages with the
    code and with its benchmark's folder."""
    folder = str(Path(source).parent)
    return Figure(
        name, (source,), lambda d: table(_report(source), _link(source, d)), (*CODE, folder)
    )


FIGURES: dict[str, Figure] = {
    f.name: f
    for f in (
        _table("readers-headline", READER_JSON, readers.headline),
        _table("readers-full", READER_JSON, readers.full),
        _table("readers-large", READER_LARGE_JSON, readers.headline),
        _table("startup", STARTUP_JSON, startup.table),
        _table("builds", BUILD_JSON, builds.table),
        _table("shared-fs", SHARED_FS_JSON, shared_fs.table),
        _table("streaming-s3", STREAM_JSON, streaming.table),
        _table("training-waits", TRAINING_JSON, training.table),
        Figure(
            "loaders-picture",
            (READER_JSON, TRAINING_JSON),
            _picture_block,
            (*CODE, "benchmarks/readers", "benchmarks/training"),
        ),
        Figure("gpu-dali", (GPU_JSON,), _gpu_block, (*CODE, "benchmarks/gpu"), gpu=True),
    )
}
PICTURES = {"loaders-picture": (PICTURE, picture_data)}
