"""The `fastpack` command: parses arguments and calls the typed functions that do the work."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import overload

from . import __version__
from .formats import FastpackError
from .sizes import parse_size

Handler = Callable[[argparse.Namespace], int]


class _SourceFormats(Sequence[str]):
    """What `--format` offers: the compiler's source registry (`compiler.sources.SOURCES`), read
    only when a format is checked or listed (the compiler is slow to import: making the parser,
    and every command but build, must not import it)."""

    def _formats(self) -> tuple[str, ...]:
        from .compiler.sources import source_formats  # noqa: PLC0415 (imported on use)

        return source_formats()

    @overload
    def __getitem__(self, index: int) -> str: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[str]: ...
    def __getitem__(self, index: int | slice) -> str | Sequence[str]:
        return self._formats()[index]

    def __len__(self) -> int:
        return len(self._formats())

    def __contains__(self, value: object) -> bool:
        return value in self._formats()


SOURCE_FORMATS = _SourceFormats()


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def _int_at_least(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"invalid integer {text!r}") from e
        if value < minimum or (maximum is not None and value > maximum):
            bounds = f"from {minimum} to {maximum}" if maximum is not None else f">= {minimum}"
            raise argparse.ArgumentTypeError(f"{value} is out of range: expected {bounds}")
        return value

    return parse


def _add_build(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser("build", help="compile an image collection into a fastpack dataset")
    p.add_argument(
        "source",
        nargs="+",
        help="ImageFolder directory (or s3://bucket/prefix/), list file (local or a URL), "
        "webdataset tars (a directory of .tar, a .tar, or URLs: shards-{000000..000099}.tar, "
        "pipe:CMD, s3://..., https://...), or TFRecord files (a directory, a file, a glob); "
        "several files or URLs are read in the order given",
    )
    p.add_argument("out", help="output dataset directory, or a URL such as s3://bucket/prefix")
    p.add_argument("--workers", type=_int_at_least(1), help="build processes (default: all cores)")
    p.add_argument(
        "--shard-size",
        type=_size,
        help="target bytes per shard: 256MB, 1GiB or a byte count (default: 256MiB)",
    )
    p.add_argument("--shuffle-seed", type=int, help="shuffle the samples with this seed")
    p.add_argument(
        "--max-side", type=_int_at_least(1), help="shrink images whose longer side exceeds this"
    )
    p.add_argument(
        "--quality",
        type=_int_at_least(1, 100),
        help="JPEG quality of converted images (default: 90)",
    )
    p.add_argument(
        "--check",
        choices=("structure", "decode"),
        help="how JPEGs stored as they are get checked: their marker structure, or also a "
        "decode that reads every byte (slower) (default: structure)",
    )
    p.add_argument(
        "--baseline",
        action="store_true",
        help="store progressive JPEGs transcoded to baseline, losslessly (the same pixels), so "
        "that crops decode only their window; needs the C extension built with libjpeg-turbo",
    )
    p.add_argument(
        "--pixel-budget",
        type=_int_at_least(1),
        metavar="SAMPLES",
        help="reject inputs whose header declares more samples (width x height x components); "
        "it bounds a worker's memory per decode (default: 268435456, 2**28: 16384 x 16384 "
        "gray, about 89 megapixels of color)",
    )
    p.add_argument("--strict", action="store_true", help="fail on any input that cannot be used")
    p.add_argument("--resume", action="store_true", help="finish an interrupted build")
    p.add_argument(
        "--shard-format",
        choices=("tar", "tfrecord"),
        default="tar",
        help="shard files: tar (webdataset, DALI webdataset reader) or tfrecord (one "
        "tf.train.Example per sample: TensorFlow, DALI tfrecord reader) (default: tar)",
    )
    p.add_argument(
        "--format",
        dest="source_format",
        choices=SOURCE_FORMATS,
        metavar="FORMAT",  # argparse lists the choices of a metavar-less option on creation
        default="auto",
        help="kind of source: %(choices)s (default: auto-detect); wds takes any URL as "
        "webdataset shards; tfrecord takes TFRecord files (a file, a directory or a quoted glob)",
    )
    p.add_argument(
        "--schema",
        type=Path,
        help="JSON file naming the fields of each sample: their types, the source columns that "
        "feed them, zstd compression (default: the source's own fields, or image and label)",
    )
    p.add_argument(
        "--dictionary-size",
        type=_size,
        help="bytes of each zstd dictionary the schema asks to train, at most: 64KiB, 112640 "
        "(default: 64KiB)",
    )
    p.add_argument(
        "--images",
        dest="images_root",
        help="COCO sources: the directory that holds the images the annotation file names",
    )
    p.add_argument(
        "--masks",
        dest="render_masks",
        action="store_true",
        help="COCO sources: render each image's instance masks into a PNG field",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--staging",
        type=Path,
        help="with a URL as OUT: local directory that holds the build until it is published; "
        "with --node-rank: this node's plan (default: under ~/.cache/fastpack; a --resume "
        "needs the same one)",
    )
    p.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        help="run the shard jobs on a Dask cluster (tcp://HOST:PORT); its workers must see SRC "
        "and OUT at the same paths, or OUT must be a URL (needs fastpack[dask])",
    )
    p.add_argument(
        "--num-nodes",
        type=_int_at_least(1),
        default=1,
        help="machines sharing the build without a scheduler (SLURM array, Kubernetes "
        "indexed job); with --node-rank, build one node's share of the shards",
    )
    p.add_argument(
        "--node-rank",
        type=_int_at_least(0),
        help="this node's share (0 to --num-nodes - 1); once every node is done, one more "
        "call with --resume (and no --node-rank) writes the index and manifest",
    )
    p.set_defaults(handler=_run_build)


def _add_info(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser("info", help="summarize a dataset from its manifest")
    p.add_argument("dataset", help="dataset directory or URL")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(handler=_run_info)


def _class_names(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"no class in {text!r}: expected NAME[,NAME...]")
    return names


def _fraction(text: str) -> float:
    value = _float_above(0, or_equal=False)(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"{text} is out of range: expected a number in (0, 1]")
    return value


def _split(text: str) -> tuple[tuple[str, float], ...]:
    from .view_build import ViewOptionsError, parse_split  # noqa: PLC0415 - keep `--help` fast

    try:
        return parse_split(text)
    except ViewOptionsError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def _add_view(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser(
        "view",
        help="write a view: a named subset of a dataset's samples, selected from its index",
        description="Select samples by class, source path and a seeded fraction, or split them "
        "into disjoint parts, and write each selection as a small view file (by default "
        "DATASET/views/NAME.fpview) that the loaders take by name. The shards are not read "
        "or rewritten. All the options given must hold.",
    )
    p.add_argument("dataset", help="dataset directory or URL")
    p.add_argument(
        "name", nargs="?", help="the view's name; with --split, the prefix of the parts' names"
    )
    p.add_argument(
        "--classes", type=_class_names, metavar="A,B", help="samples of these classes (names)"
    )
    p.add_argument(
        "--fraction",
        type=_fraction,
        metavar="F",
        help="a seeded fraction F in (0, 1] of the samples; with one seed, a smaller fraction "
        "is a subset of a larger one",
    )
    p.add_argument(
        "--split",
        type=_split,
        metavar="PART:F,...",
        help="one view per part, disjoint, e.g. train:0.9,val:0.1 (fractions sum to at most "
        "1); named NAME-PART, or PART without NAME",
    )
    p.add_argument(
        "--where",
        metavar="GLOB",
        help="samples whose source path matches this glob (fnmatch: *, ?, [...]; * matches / "
        "too); quote it",
    )
    p.add_argument(
        "--balance", action="store_true", help="mark the views to be drawn class-balanced"
    )
    p.add_argument(
        "--seed",
        type=_int_at_least(0),
        default=0,
        help="seed of --fraction and --split (default: 0)",
    )
    p.add_argument(
        "--output",
        help="where to write: a file (or URL) for one view, a directory for a split (default: "
        "beside the dataset, DATASET/views/NAME.fpview)",
    )
    p.set_defaults(handler=_run_view)


def _add_verify(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser("verify", help="check a dataset's files against its manifest and index")
    p.add_argument("dataset", help="dataset directory or URL")
    p.add_argument("--decode", action="store_true", help="also decode every image")
    p.add_argument("--progress", action="store_true", help="show a progress bar")
    p.add_argument(
        "--view",
        dest="views",
        action="append",
        metavar="FILE",
        help="check this view file (a path or URL, lying anywhere) against DATASET instead of "
        "the whole dataset (views beside the dataset are checked with it); repeatable",
    )
    p.set_defaults(handler=_run_verify)


def _add_demo(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser(
        "demo", help="draw an ImageFolder, build it and train a tiny model from it (needs torch)"
    )
    p.add_argument("--dir", type=Path, help="keep the images and dataset here (new or empty)")
    p.add_argument("--images", type=_int_at_least(1), default=2000)
    p.add_argument("--classes", type=_int_at_least(1), default=10)
    p.add_argument("--batches", type=_int_at_least(1), default=20)
    p.add_argument("--batch-size", type=_int_at_least(1), default=64)
    p.add_argument("--workers", type=_int_at_least(0), help="loader workers (default: all cores)")
    p.add_argument("--size", type=_int_at_least(8), default=224, help="crop size in pixels")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(handler=_run_demo)


def _loader_names(text: str) -> tuple[str, ...]:
    from .bench.options import LOADERS  # noqa: PLC0415 - keep `--help` fast

    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in LOADERS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown loader {', '.join(unknown) or repr(text)}: expected a comma-separated "
            f"list of {', '.join(LOADERS)}"
        )
    return names


def _float_above(minimum: float, *, or_equal: bool) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError as e:
            raise argparse.ArgumentTypeError(f"invalid number {text!r}") from e
        if not (value >= minimum if or_equal else value > minimum):
            expected = f"{'>=' if or_equal else '>'} {minimum:g}"
            raise argparse.ArgumentTypeError(f"{text} is out of range: expected {expected}")
        return value

    return parse


def _add_bench(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        "--workers", type=_int_at_least(0), help="loader workers (default: min(8, cores))"
    )
    p.add_argument("--batch-size", type=_int_at_least(1), default=64, help="(default: 64)")
    p.add_argument(
        "--transform",
        choices=("random-resized-crop", "center-crop"),
        default="random-resized-crop",
        help="the training or the evaluation crop (default: random-resized-crop)",
    )
    p.add_argument(
        "--size", type=_int_at_least(1), default=224, help="crop size in pixels (default: 224)"
    )
    p.add_argument(
        "--seconds",
        type=_float_above(0, or_equal=False),
        default=3.0,
        help="length of a timed pass, at most (default: 3)",
    )
    p.add_argument(
        "--batches",
        type=_int_at_least(1),
        help="batches of a timed pass, at most (default: no limit)",
    )
    p.add_argument(
        "--passes",
        type=_int_at_least(1),
        default=3,
        help="timed passes per loader, after a warm-up; the median is shown (default: 3)",
    )
    p.add_argument(
        "--step-ms",
        type=_float_above(0, or_equal=True),
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fastpack",
        description="Compile labeled images into tar shards with a memory-mapped index; read them.",
    )
    parser.add_argument("--version", action="version", version=f"fastpack {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_build, _add_info, _add_verify, _add_view, _add_demo, _add_bench):
        add(commands)
    return parser


def _source(sources: list[str]) -> str:
    """One source, or several files or URLs (a shell's expansion of `train-*.tfrecord`) as the
    webdataset-style `::` list every container source reads."""
    return sources[0] if len(sources) == 1 else "::".join(sources)


def _run_build(args: argparse.Namespace) -> int:
    from .compiler import BuildError, BuildOptions, build  # noqa: PLC0415 - keep `--help` fast
    from .compiler.build_schema import read_build_schema  # noqa: PLC0415
    from .compiler.errors import os_error_words  # noqa: PLC0415

    given = {
        "shard_size": args.shard_size,
        "quality": args.quality,
        "check": args.check,
        "dictionary_size": args.dictionary_size,
        "pixel_budget": args.pixel_budget,
    }
    options = BuildOptions(
        workers=args.workers,
        shuffle_seed=args.shuffle_seed,
        max_side=args.max_side,
        baseline=args.baseline,
        strict=args.strict,
        resume=args.resume,
        source_format=args.source_format,
        progress=not args.no_progress,
        schema=read_build_schema(args.schema) if args.schema is not None else None,
        images_root=args.images_root,
        render_masks=args.render_masks,
        shard_format=args.shard_format,
        num_nodes=args.num_nodes,
        node_rank=args.node_rank,
        **{name: value for name, value in given.items() if value is not None},  # else defaults
    )
    try:
        summary = build(
            _source(args.source), args.out, options, cluster=args.scheduler, staging=args.staging
        )
    except OSError as e:  # the machine's (no input's content stops a build): named, no traceback
        if isinstance(e, FastpackError):
            raise
        raise BuildError(f"the build stopped: {os_error_words(e)}; finished shards are kept") from e
    print(summary.format())
    return 0


def _run_info(args: argparse.Namespace) -> int:
    from .info import dataset_info  # noqa: PLC0415

    info = dataset_info(args.dataset)
    print(json.dumps(info.to_dict(), indent=2, sort_keys=True) if args.json else info.format())
    return 0


def _run_verify(args: argparse.Namespace) -> int:
    from .reader import verify_dataset, verify_remote, verify_view  # noqa: PLC0415
    from .storage import is_url  # noqa: PLC0415

    if args.views:
        report = verify_view(args.dataset, args.views)
        print(report.format())
    elif is_url(args.dataset):
        report = verify_remote(args.dataset, decode=args.decode, progress=args.progress)
        print(report.format().replace(str(report.path), args.dataset))
    else:
        report = verify_dataset(args.dataset, decode=args.decode, progress=args.progress)
        print(report.format())
    return 0 if report.ok else 1


def _run_view(args: argparse.Namespace) -> int:
    from .view_build import build_views, save_views  # noqa: PLC0415 - keep `--help` fast

    views = build_views(
        args.dataset,
        args.name,
        classes=args.classes,
        fraction=args.fraction,
        split=args.split,
        where=args.where,
        balance=args.balance,
        seed=args.seed,
    )
    for view, path in zip(views, save_views(args.dataset, views, output=args.output), strict=True):
        print(f"{view.name}: {view.count} of {view.num_samples} samples -> {path}")
    return 0


def _run_demo(args: argparse.Namespace) -> int:
    from .demo import DemoOptions, run_demo  # noqa: PLC0415

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
    from .bench import LOADERS, BenchOptions, default_workers, run_bench  # noqa: PLC0415

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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line `argv` (default: `sys.argv[1:]`); returns the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as e:  # argparse exits on --help, --version and bad arguments
        return e.code if isinstance(e.code, int) else 2
    handler: Handler = args.handler
    try:
        return handler(args)
    except FastpackError as e:
        print(f"fastpack: error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fastpack: interrupted", file=sys.stderr)
        return 130
