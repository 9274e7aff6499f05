"""The commands that read a dataset: `info`, `verify`, and `view`, which writes a named subset
of a dataset's samples."""

from __future__ import annotations

import argparse
import json

from .args import float_above, int_at_least


def add_info(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser("info", help="summarize a dataset from its manifest")
    p.add_argument("dataset", help="dataset directory or URL")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _add_version(p, "summarize this version of a dataset grown by appends")
    p.set_defaults(handler=_run_info)


def _add_version(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument(
        "--version",
        type=int_at_least(1),
        metavar="N",
        help=f"{what} (default: the latest)",
    )


def add_verify(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def _class_names(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise argparse.ArgumentTypeError(f"no class in {text!r}: expected NAME[,NAME...]")
    return names


def _fraction(text: str) -> float:
    value = float_above(0, or_equal=False)(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"{text} is out of range: expected a number in (0, 1]")
    return value


def _split(text: str) -> tuple[tuple[str, float], ...]:
    from ..view_build import ViewOptionsError, parse_split  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast

    try:
        return parse_split(text)
    except ViewOptionsError as e:
        raise argparse.ArgumentTypeError(str(e)) from e


def add_view(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
        type=int_at_least(0),
        default=0,
        help="seed of --fraction and --split (default: 0)",
    )
    p.add_argument(
        "--output",
        help="where to write: a file (or URL) for one view, a directory for a split (default: "
        "beside the dataset, DATASET/views/NAME.fpview)",
    )
    _add_version(p, "make the views on this version of a dataset grown by appends")
    p.set_defaults(handler=_run_view)


def _run_info(args: argparse.Namespace) -> int:
    from ..info import dataset_info  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast

    info = dataset_info(args.dataset, version=args.version)
    print(json.dumps(info.to_dict(), indent=2, sort_keys=True) if args.json else info.format())
    return 0


def _run_verify(args: argparse.Namespace) -> int:
    from ..reader import verify_dataset, verify_remote, verify_view  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast
    from ..storage import is_url  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast

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
    from ..view_build import build_views, save_views  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast

    views = build_views(
        args.dataset,
        args.name,
        classes=args.classes,
        fraction=args.fraction,
        split=args.split,
        where=args.where,
        balance=args.balance,
        seed=args.seed,
        version=args.version,
    )
    for view, path in zip(views, save_views(args.dataset, views, output=args.output), strict=True):
        print(f"{view.name}: {view.count} of {view.num_samples} samples -> {path}")
    return 0
