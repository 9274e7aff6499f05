"""`fastpack index`: its arguments, and the call of `compiler.index_shards`: a dataset over
webdataset tars or TFRecord files that stay where they are."""

from __future__ import annotations

import argparse
from pathlib import Path

from .args import int_at_least

FORMATS = ("auto", "wds", "tfrecord")


def add_index(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser(
        "index",
        help="index existing webdataset tars or TFRecord files in place (no copy)",
        description=(
            "Write a dataset's index, manifest and DALI indexes over shards that already exist, "
            "where they are (local, mounted, or at a URL): not one byte of shard data is "
            "written. Samples that fail the build's checks are left out and listed in "
            "rejects.jsonl."
        ),
    )
    p.add_argument(
        "sources",
        nargs="+",
        metavar="SRC",
        help="shards: .tar or TFRecord files, directories of them, globs, URLs, URL prefixes",
    )
    p.add_argument("out", metavar="OUT", help="where the dataset's files go: a directory or a URL")
    p.add_argument("--schema", type=Path, help="schema file naming the fields to index")
    p.add_argument("--classes", type=Path, help="class names, one a line: label k is the k-th name")
    p.add_argument(
        "--workers", type=int_at_least(1), help="processes, one shard each (default: cores)"
    )
    p.add_argument(
        "--format", dest="shard_format", choices=FORMATS, default="auto", help="shard format"
    )
    p.add_argument(
        "--shard-root",
        help="what the manifest records as where the shards lie (default: found)",
    )
    p.add_argument(
        "--check",
        choices=("structure", "decode"),
        default="structure",
        help="JPEG check: marker walk or decode",
    )
    p.set_defaults(handler=_run_index)


def _classes(path: Path) -> tuple[str, ...]:
    from ..compiler import SourceError  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast

    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise SourceError(f"{path}: cannot read the class list ({e})") from e
    names = tuple(line.strip() for line in lines if line.strip())
    if not names:
        raise SourceError(f"{path}: the class list names no class")
    if len(set(names)) != len(names):
        raise SourceError(f"{path}: a class is named twice")
    return names


def _run_index(args: argparse.Namespace) -> int:
    from ..compiler import IndexOptions, index_shards  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast
    from ..compiler.build_schema import read_build_schema  # noqa: PLC0415 -- on use

    options = IndexOptions(
        schema=read_build_schema(args.schema) if args.schema is not None else None,
        classes=_classes(args.classes) if args.classes is not None else None,
        workers=args.workers,
        format=args.shard_format,
        shard_root=args.shard_root,
        check=args.check,
    )
    summary = index_shards(args.sources, args.out, options)
    print(summary.format())
    return 0
