"""The commands that need torch: `demo` (draw, build and train a tiny model) and `bench` (time
each way of reading a dataset on this machine)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .args import float_above, int_at_least


def add_demo(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser(
        "demo", help="draw an ImageFolder, build it and train a tiny model from it (needs torch)"
    )
    p.add_argument("--dir", type=Path, help="keep the images and dataset here (new or empty)")
    p.add_argument("--images", type=int_at_least(1), default=2000)
    p.add_argument("--classes", type=int_at_least(1), default=10)
    p.add_argument("--batches", type=int_at_least(1), default=20)
    p.add_argument("--batch-size", type=int_at_least(1), default=64)
    p.add_argument("--workers", type=int_at_least(0), help="loader workers (default: all cores)")
    p.add_argument("--size", type=int_at_least(8), default=224, help="crop size in pixels")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(handler=_run_demo)


def _loader_names(text: str) -> tuple[str, ...]:
    from ..bench.options import LOADERS  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast

    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in LOADERS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown loader {', '.join(unknown) or repr(text)}: expected a comma-separated "
            f"list of {', '.join(LOADERS)}"
        )
    return names


def add_bench(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser(
        "bench",
        help="time each way of reading a dataset on this machine and say which to use (needs "
        "torch)",
        description="Time the map-style, streaming and DALI CPU loaders over a dataset with "
        "your workers and transform, against the decode-only ceiling (JPEG decode + transform "
        "of payloads in memory, measured with as many processes as workers), and say which "
        "loader to use and what limits it. A URL's endpoint and credentials come from the "
        "environment (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ...), as for `info` and `verify`.",
    )
    p.add_argument("dataset", help="dataset directory or URL")
    p.add_argument(
        "--workers", type=int_at_least(0), help="loader workers (default: min(8, cores))"
    )
    p.add_argument("--batch-size", type=int_at_least(1), default=64, help="(default: 64)")
    p.add_argument(
        "--transform",
        choices=("random-resized-crop", "center-crop"),
        default="random-resized-crop",
        help="the training or the evaluation crop (default: random-resized-crop)",
    )
    p.add_argument(
        "--size", type=int_at_least(1), default=224, help="crop size in pixels (default: 224)"
    )
    p.add_argument(
        "--seconds",
        type=float_above(0, or_equal=False),
        default=3.0,
        help="length of a timed pass, at most (default: 3)",
    )
    p.add_argument(
        "--batches",
        type=int_at_least(1),
        help="batches of a timed pass, at most (default: no limit)",
    )
    p.add_argument(
        "--passes",
        type=int_at_least(1),
        default=3,
        help="timed passes per loader, after a warm-up; the median is shown (default: 3)",
    )
    p.add_argument(
        "--step-ms",
        type=float_above(0, or_equal=True),
        default=0.0,
        help="simulated training step: the loop sleeps this long after each batch, and the "
        "waiting share is the time spent waiting for batches (default 0: pure loading)",
    )
    p.add_argument(
        "--only",
        type=_loader_names,
        metavar="LOADERS",
        help="comma-separated loaders to time: map-style, streaming, dali-cpu (default: all)",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(handler=_run_bench)


def _run_demo(args: argparse.Namespace) -> int:
    from ..demo import DemoOptions, run_demo  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast

    options = DemoOptions(
        directory=args.dir,
        images=args.images,
        classes=args.classes,
        batches=args.batches,
        batch_size=args.batch_size,
        workers=args.workers,
        size=args.size,
        seed=args.seed,
        progress=not args.no_progress,
    )
    print(run_demo(options).format())
    return 0


def _run_bench(args: argparse.Namespace) -> int:
    from ..bench import LOADERS, BenchOptions, default_workers, run_bench  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast

    options = BenchOptions(
        path=args.dataset,
        workers=default_workers() if args.workers is None else args.workers,
        batch_size=args.batch_size,
        transform=args.transform,
        size=args.size,
        seconds=args.seconds,
        batches=args.batches,
        passes=args.passes,
        step_ms=args.step_ms,
        loaders=args.only or LOADERS,
    )
    report = run_bench(options, log=lambda line: print(f"bench: {line}", file=sys.stderr))
    print(json.dumps(report.to_dict(), indent=2) if args.json else report.format())
    return 0
