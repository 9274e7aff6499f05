"""`fastpack append`: its arguments, and the call of `compiler.append`.

The new inputs are shaped by the dataset's own build options (shard size, image policy,
schema, shard format), so the command takes none of them: only how to run."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..formats import FastpackError
from .args import int_at_least
from .build import SOURCE_FORMATS, SOURCE_HELP, SourceHelp


def add_append(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser(
        "append",
        help="add new inputs to a fastpack dataset as new shards: its next version",
        description="Build the new inputs into new shards with the dataset's own options and "
        "publish them as the dataset's next version (versions/NNNNNN/); no byte of the earlier "
        "versions changes, and readers of them read on undisturbed.",
        formatter_class=SourceHelp,
    )
    p.add_argument("dataset", help="the dataset directory, or a URL such as s3://bucket/prefix")
    p.add_argument("source", nargs="+", help=SOURCE_HELP)
    p.add_argument("--workers", type=int_at_least(1), help="build processes (default: all cores)")
    p.add_argument("--strict", action="store_true", help="fail on any input that cannot be used")
    p.add_argument(
        "--resume",
        action="store_true",
        help="finish an interrupted append (taking over its lock if its process is gone)",
    )
    p.add_argument(
        "--format",
        dest="source_format",
        choices=SOURCE_FORMATS,
        metavar="FORMAT",
        default="auto",
        help="kind of source: %(choices)s (default: auto-detect; see SOURCE)",
    )
    p.add_argument(
        "--images",
        dest="images_root",
        help="COCO sources: the directory that holds the images the annotation file names",
    )
    p.add_argument(
        "--skip-duplicates",
        action="store_true",
        help="leave out new inputs whose bytes the dataset stores already (any version) or "
        "an earlier new input has: exact copies of stored JPEGs only (an input the build "
        "converts never matches); counted in the manifest's stats.duplicates",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--staging",
        type=Path,
        help="with a URL as DATASET: local directory that holds the new shards until they are "
        "published (default: under ~/.cache/fastpack; a --resume needs the same one)",
    )
    p.set_defaults(handler=_run_append)


def _run_append(args: argparse.Namespace) -> int:
    from ..compiler import BuildError, BuildOptions, append  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast
    from ..compiler.errors import os_error_words  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast

    options = BuildOptions(
        workers=args.workers,
        strict=args.strict,
        resume=args.resume,
        source_format=args.source_format,
        progress=not args.no_progress,
        images_root=args.images_root,
    )
    source = args.source[0] if len(args.source) == 1 else "::".join(args.source)
    try:
        summary = append(
            args.dataset,
            source,
            options,
            staging=args.staging,
            skip_duplicates=args.skip_duplicates,
        )
    except OSError as e:  # the machine's: named, no traceback
        if isinstance(e, FastpackError):
            raise
        raise BuildError(f"the append stopped: {os_error_words(e)}; finish it with --resume") from e
    print(summary.format())
    return 0
