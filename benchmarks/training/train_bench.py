"""End-to-end training benchmark: each loader feeds a real training step, in a fresh process per
loader and round, and the loop times its own wait for data.

    python -m benchmarks.training.train_bench --corpus /tmp/photo-corpus/train \
        --models resnet50,resnet18

Cases: `long` reads the whole corpus each epoch (`--epochs` timed epochs after a start-up one);
`short` reads a random `--short-images` of it (hard links) for `--short-epochs` epochs, so that
each epoch is a few batches and its start is most of its wait. Loaders (`--loaders`, default
all; `_loaders.LOADERS` says what each is): those that cannot run here are recorded with why
("not installed: torchvision", "needs CUDA") and skipped. Models (`--models`): `small` (a small
CNN defined in `_model.py`, for CPU-only machines), `resnet18` and `resnet50` (torchvision).
Each run (`_train_run.py`) reports per epoch images/s, the share of wall time spent in `next()`
by the loop's own timer and by `loader.stats()`, the first batch's wait, the CPU seconds of the
process tree; the parent samples its peak PSS and RSS (`benchmarks/procmem.py`). Rounds run
every (model, case, loader) in turn, the loader order rotated each round; the page gives medians
over rounds with their ranges, the JSON every round and epoch.

Flags: `--corpus`, `--workdir` (`/tmp/fastpack-training`: datasets kept, logs), `--models`
(`small`), `--loaders`, `--cases` (`long,short`), `--batch-size` (256), `--workers` (2),
`--device-decode-workers` (fastpack-nvimgcodec's, which only read and draw; default `--workers`),
`--epochs` (3), `--short-images` (4 batches), `--short-epochs` (8), `--rounds` (3), `--timeout`
(1800 s per run), `--out-json`, `--out-md`, `--render JSON` (only re-render the page), `--commit`
(the commit measured, for a copy of the tree that is not a git checkout)."""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

from benchmarks import sysinfo
from benchmarks.launch import REPO, run_step
from benchmarks.training._loaders import LOADERS, prepare, subset, unavailable
from benchmarks.training._page import render

HERE = Path(__file__).resolve().parent
DEVICE_DECODE = "fastpack-nvimgcodec"  # its workers read and draw; the GPU decodes
EXTRA_DISTRIBUTIONS = (
    "torchvision",
    "nvidia-dali-cuda130",
    "nvidia-nvimgcodec-cu12",
    "nvidia-nvjpeg-cu12",
)


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/photo-corpus/train"))
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/fastpack-training"))
    parser.add_argument("--models", default="small")
    parser.add_argument("--loaders", default=",".join(LOADERS))
    parser.add_argument("--cases", default="long,short")
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--device-decode-workers",
        type=int,
        default=None,
        help="workers of fastpack-nvimgcodec, which only read and draw (default: --workers)",
    )
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--short-images", type=int, default=None, help="default: 4 batches")
    parser.add_argument("--short-epochs", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--out-json", type=Path, default=HERE / "training_results.json")
    parser.add_argument("--out-md", type=Path, default=HERE / "TRAINING.md")
    parser.add_argument("--render", type=Path, default=None, help="only re-render this JSON")
    parser.add_argument("--commit", default=None, help="fastpack commit measured (default: git)")
    return parser.parse_args(argv)


def _split(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def prepare_cases(args: argparse.Namespace) -> dict[str, Path]:
    """The data folder of each case: the corpus as it is, and the short case's subset."""
    folders = {}
    for case in _split(args.cases):
        if case == "long":
            corpus = args.corpus
        elif case == "short":
            images = args.short_images or 4 * args.batch_size
            corpus = subset(args.corpus, args.workdir / "short-corpus", images)
        else:
            raise ValueError(f"unknown case {case!r}; cases are long, short")
        folders[case] = args.workdir / case
        prepare(corpus, folders[case], args.workers)
    return folders


def run_one(args: argparse.Namespace, child: list[str], log: Path) -> dict[str, Any]:
    """One fresh process (`_train_run` with the arguments `child`); its result, peak memory,
    or the error that ended it."""
    workers = args.workers
    if child[child.index("--loader") + 1] == DEVICE_DECODE and args.device_decode_workers:
        workers = args.device_decode_workers
    command = [*child, "--batch-size", str(args.batch_size), "--workers", str(workers)]
    outcome = run_step("training._train_run", command, log, args.timeout, memory=True)
    return {
        "result": outcome.result,
        "error": outcome.error,
        "peak_pss_mib": round(outcome.memory.pss_mib, 1),
        "peak_rss_mib": round(outcome.memory.rss_mib, 1),
        "processes": outcome.memory.processes,
    }


def rotated(items: Sequence[str], by: int) -> list[str]:
    by %= max(1, len(items))
    return [*items[by:], *items[:by]]


def measure(args: argparse.Namespace, report: dict[str, Any], save: Callable[[], None]) -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    loaders = _split(args.loaders)
    report["unavailable"] = {n: why for n in loaders if (why := unavailable(n, device))}
    runnable = [n for n in loaders if n not in report["unavailable"]]
    folders = prepare_cases(args)
    epochs = {"long": args.epochs, "short": args.short_epochs}
    for round_ in range(args.rounds):
        for model in _split(args.models):
            for case, data in folders.items():
                for loader in rotated(runnable, round_):
                    log = args.workdir / "logs" / f"{model}-{case}-{loader}-{round_}.log"
                    started = time.strftime("%H:%M:%S")
                    child = ["--loader", loader, "--model", model, "--data", str(data)]
                    child += ["--epochs", str(epochs[case])]
                    run = run_one(args, child, log)
                    run.update(round=round_, model=model, case=case, loader=loader)
                    run.update(started=started, load=sysinfo.load())
                    report["runs"].append(run)
                    print(f"round {round_} {model} {case} {loader}: {run['error'] or 'ok'}")
                    save()


def main(argv: list[str] | None = None) -> None:
    args = parse(argv)
    if args.render is not None:
        args.out_md.write_text(render(json.loads(args.render.read_text()), args.render.name))
        return
    args.workdir.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "machine": sysinfo.machine(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "load_before": sysinfo.load(),
        "versions": sysinfo.versions(sysinfo.DISTRIBUTIONS + EXTRA_DISTRIBUTIONS),
        "commit": args.commit or sysinfo.fastpack_commit(REPO),
        "corpus": sysinfo.corpus(args.corpus),
        "settings": {
            key: (str(value) if isinstance(value, Path) else value)
            for key, value in vars(args).items()
            if key not in ("render", "out_json", "out_md", "commit")
        },
        "affinity": len(os.sched_getaffinity(0)),
        "runs": [],
    }

    def save() -> None:
        args.out_json.write_text(json.dumps(report, indent=1) + "\n")

    measure(args, report, save)
    report["load_after"] = sysinfo.load()
    save()
    args.out_md.write_text(render(report, args.out_json.name))
    print(f"wrote {args.out_json} and {args.out_md}")


if __name__ == "__main__":
    main()
