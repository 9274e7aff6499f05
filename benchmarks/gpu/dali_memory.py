"""Host memory of DALI's CPU path over many epochs, with and without the malloc fix.

Each configuration runs in a fresh interpreter (`mallopt` is process-wide): a DALI loader
(`make_dali_loader`, `device="cpu"`) for `--epochs` epochs, recording RssAnon and VmRSS from
/proc/self/status and images/s after each epoch. `--compare` instead times DALI's CPU path
against the simplejpeg DataLoader (`make_loader`) with the same thread/worker count, peak memory
of the process tree sampled from /proc. Run from the repository root:

    python -m benchmarks.gpu.dali_memory --source /tmp/photo-corpus/train --per-class 100
    python -m benchmarks.gpu.dali_memory --source /tmp/photo-corpus/train --compare
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastpack.formats import MANIFEST_NAME

from benchmarks import procmem
from benchmarks.procmem import TreeSampler
from benchmarks.sysinfo import load

FIX_BYTES = 256 * 1024  # make_dali_loader's default malloc_mmap_threshold
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".JPG", ".JPEG")


# -- dataset ------------------------------------------------------------------------------------


def subset_folder(source: Path, out: Path, per_class: int | None) -> Path:
    """`source` itself, or a copy of its first `per_class` images of every class."""
    if per_class is None:
        return source
    if out.exists():
        return out
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    for klass in sorted(p for p in source.iterdir() if p.is_dir()):
        (tmp / klass.name).mkdir(parents=True)
        images = sorted(p for p in klass.iterdir() if p.suffix in IMAGE_SUFFIXES)
        for image in images[:per_class]:
            shutil.copyfile(image, tmp / klass.name / image.name)
    tmp.rename(out)
    return out


def built_dataset(source: Path, work: Path, per_class: int | None, shard_mib: int) -> Path:
    """The fastpack dataset of `source` (limited to `per_class`) under `work`, built once."""
    from fastpack.compiler import BuildOptions, build  # noqa: PLC0415 -- on use: in the fresh interpreter of each configuration

    tag = f"{source.name}-{per_class or 'all'}-{shard_mib}m"
    folder = subset_folder(source, work / f"src-{tag}", per_class)
    out = work / f"ds-{tag}"
    if not (out / MANIFEST_NAME).exists():
        options = BuildOptions(workers=2, progress=False, shard_size=shard_mib * 2**20)
        print(build(folder, out, options).format(), file=sys.stderr)
    return out


# -- one configuration, in this process ---------------------------------------------------------


def self_kib() -> dict[str, int]:
    """RssAnon and VmRSS of this process in KiB."""
    fields = procmem.status_kib("self")
    return {key: fields[key] for key in ("RssAnon", "VmRSS") if key in fields}


def run_memory(dataset: Path, train: bool, fix: bool, epochs: int, threads: int) -> dict[str, Any]:
    """Per-epoch memory and throughput of one DALI CPU loader."""
    from fastpack.reader import (  # noqa: PLC0415 -- on use: in the fresh interpreter of each configuration
        CenterCrop,
        DaliOptions,
        RandomResizedCrop,
        make_dali_loader,
    )

    loader = make_dali_loader(
        dataset,
        batch_size=64,
        num_workers=threads,
        transform=RandomResizedCrop(224) if train else CenterCrop(224),
        dali=DaliOptions(malloc_mmap_threshold=FIX_BYTES if fix else None),
    )
    rows = []
    for epoch in range(epochs):
        started, seen = time.perf_counter(), 0
        for images, _ in loader:
            seen += int(images.shape[0])
        seconds = time.perf_counter() - started
        mem = self_kib()
        rss = {"rss_anon_mib": mem["RssAnon"] / 1024, "rss_mib": mem["VmRSS"] / 1024}
        rows.append({"epoch": epoch, "images": seen, "seconds": seconds, **rss})
    loader.close()
    return {"train": train, "fix": fix, "epochs": rows, "load": load()}


def _timed_epochs(loader: Any, epochs: int, dataset: Any = None) -> list[float]:
    """images/s of each epoch of `loader` (setting the epoch on `dataset` first)."""
    rates = []
    for epoch in range(epochs):
        if dataset is not None:
            dataset.set_epoch(epoch)
        started, seen = time.perf_counter(), 0
        for images, _ in loader:
            seen += int(images.shape[0])
        rates.append(seen / (time.perf_counter() - started))
    return rates


def run_compare(dataset: Path, decoder: str, epochs: int, threads: int) -> dict[str, Any]:
    """images/s per epoch and the process tree's peak memory for one decoder (train crops)."""
    from fastpack.reader import Dataset, RandomResizedCrop, make_dali_loader, make_loader  # noqa: PLC0415 -- on use: in the fresh interpreter of each configuration

    sampler = TreeSampler(os.getpid(), interval=0.1).start()
    if decoder == "dali":
        loader: Any = make_dali_loader(
            dataset, batch_size=64, transform=RandomResizedCrop(224), num_workers=threads
        )
        rates = _timed_epochs(loader, epochs)
        loader.close()
    else:
        ds = Dataset(dataset, transform=RandomResizedCrop(224))
        loader = make_loader(ds, batch_size=64, num_workers=threads)
        rates = _timed_epochs(loader, epochs, ds)
    peaks = sampler.stop()
    peak = {"peak_rss_mib": peaks.rss_mib, "peak_pss_mib": peaks.pss_mib}
    return {
        "decoder": decoder,
        "rates": rates,
        **peak,
        "processes": peaks.processes,
        "load": load(),
    }


# -- driver: fresh interpreters, Markdown out ---------------------------------------------------


def child(args: Sequence[str]) -> dict[str, Any]:
    """Run `python -m benchmarks.gpu.dali_memory --child ...` and parse its JSON line."""
    command = [sys.executable, "-m", "benchmarks.gpu.dali_memory", "--child", *args]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


_SLOPE_POINTS = 2  # epochs needed for a growth per epoch


def slope(values: Sequence[float]) -> float:
    """Least-squares slope per epoch."""
    n = len(values)
    if n < _SLOPE_POINTS:
        return 0.0
    xs = range(n)
    mx, my = (n - 1) / 2, statistics.fmean(values)
    num = sum((x - mx) * (y - my) for x, y in zip(xs, values, strict=True))
    return num / sum((x - mx) ** 2 for x in xs)


def memory_row(result: dict[str, Any]) -> str:
    rows = result["epochs"]
    cells = [("train" if result["train"] else "eval"), ("256 KiB" if result["fix"] else "none")]
    for key in ("rss_anon_mib", "rss_mib"):
        v = [r[key] for r in rows]
        cells += [
            f"{v[0]:.1f}",
            f"{v[-1]:.1f}",
            f"{min(v):.1f}",
            f"{max(v):.1f}",
            f"{v[-1] - v[0]:+.1f}",
            f"{slope(v):+.2f}",
        ]
    rates = [r["images"] / r["seconds"] for r in rows[1:]] or [0.0]
    cells += [str(len(rows)), f"{statistics.median(rates):.0f}", result["load"]]
    return "| " + " | ".join(cells) + " |"


MEMORY_HEADER = (
    "| mode | malloc fix | RssAnon first | last | min | max | last-first | slope/epoch "
    "| RSS first | last | min | max | last-first | slope/epoch | epochs | img/s median | load |\n"
    "|---|---|" + "---:|" * 14 + "---|"
)


def compare_row(result: dict[str, Any]) -> str:
    rates = result["rates"]
    cells = [
        "DALI CPU (2 threads)" if result["decoder"] == "dali" else "simplejpeg (2 workers)",
        " / ".join(f"{r:.0f}" for r in rates),
        f"{statistics.median(rates):.0f}",
        f"{result['peak_rss_mib']:.0f}",
        f"{result['peak_pss_mib']:.0f}",
        str(result["processes"]),
        result["load"],
    ]
    return "| " + " | ".join(cells) + " |"


COMPARE_HEADER = (
    "| loader | img/s per epoch | median | peak RSS (MiB, tree) | peak PSS (MiB, tree) "
    "| processes | load |\n|---|---|---:|---:|---:|---:|---|"
)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--source", type=Path, default=Path("/tmp/photo-corpus/train"))
    p.add_argument("--dataset", type=Path, help="an existing fastpack dataset (skips the build)")
    p.add_argument("--work", type=Path, default=Path("/tmp/fastpack-dali-bench"))
    p.add_argument("--per-class", type=int, help="use only the first N images of each class")
    p.add_argument("--shard-mib", type=int, default=32)
    p.add_argument("--epochs", type=int, default=25)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--modes", default="train", help="comma list of train, eval")
    p.add_argument("--fix", default="on,off", help="comma list of on, off")
    p.add_argument("--compare", action="store_true", help="DALI CPU vs simplejpeg instead")
    p.add_argument("--compare-epochs", type=int, default=3)
    p.add_argument("--child", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    if args.child is not None:
        spec = json.loads(args.child)
        path = Path(spec["dataset"])
        if "decoder" in spec:
            out = run_compare(path, spec["decoder"], spec["epochs"], spec["threads"])
        else:
            out = run_memory(path, spec["train"], spec["fix"], spec["epochs"], spec["threads"])
        print(json.dumps(out))
        return
    dataset = args.dataset or built_dataset(args.source, args.work, args.per_class, args.shard_mib)
    print(f"dataset: {dataset}, load before: {load()}\n")
    base = {"dataset": str(dataset), "threads": args.threads}
    if args.compare:
        print(COMPARE_HEADER)
        for decoder in ("dali", "simplejpeg"):
            spec = {**base, "decoder": decoder, "epochs": args.compare_epochs}
            print(compare_row(child([json.dumps(spec)])), flush=True)
        return
    print(MEMORY_HEADER)
    for mode in args.modes.split(","):
        for fix in args.fix.split(","):
            spec = {**base, "train": mode == "train", "fix": fix == "on", "epochs": args.epochs}
            result = child([json.dumps(spec)])
            print(memory_row(result), flush=True)
            raw = args.work / f"raw-{mode}-fix-{fix}.json"
            raw.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
