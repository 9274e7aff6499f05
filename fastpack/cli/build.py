"""`fastpack build`: its arguments, and the call of `compiler.build`.

What `--format` offers and what the help says of each kind of source come from the compiler's
source registry (`compiler.sources.SOURCES`), read only when a format is checked or the help is
shown: the compiler is slow to import, and making the parser (every command does) must not
import it."""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, overload

from ..formats import FastpackError
from ..sizes import parse_size
from .args import int_at_least

if TYPE_CHECKING:
    from ..compiler.sources import Source

# in `build --help`, where the source formats are listed from the registry (`SourceHelp`)
SOURCE_HELP = "the source, of one of the formats the source registry lists"


def _registry() -> tuple[tuple[str, ...], Mapping[str, Source]]:
    """The source formats a build takes (`auto` first), and the registered sources."""
    from ..compiler.sources import SOURCES, source_formats  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast

    return source_formats(), SOURCES


def source_help() -> str:
    """The help of `build`'s source: each registered format, and what a source of it is."""
    _, sources = _registry()
    kinds = "; ".join(f"{kind}: {source.description}" for kind, source in sources.items())
    return f"{kinds}; several files or URLs are read in the order given"


class SourceHelp(argparse.HelpFormatter):
    """`build`'s help, with the source's help written from the registry as it is shown."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.help == SOURCE_HELP:
            return source_help().replace("%", "%%")  # the help is a %-format
        return super()._get_help_string(action)


class _SourceFormats(Sequence[str]):
    """What `--format` offers: `auto`, then every kind in the registry, read on use."""

    def _formats(self) -> tuple[str, ...]:
        return _registry()[0]

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


def add_build(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = commands.add_parser(
        "build",
        help="compile an image collection into a fastpack dataset",
        formatter_class=SourceHelp,
    )
    p.add_argument("source", nargs="+", help=SOURCE_HELP)
    p.add_argument("out", help="output dataset directory, or a URL such as s3://bucket/prefix")
    p.add_argument("--workers", type=int_at_least(1), help="build processes (default: all cores)")
    p.add_argument(
        "--shard-size",
        type=_size,
        help="target bytes per shard: 256MB, 1GiB or a byte count (default: 256MiB)",
    )
    p.add_argument("--shuffle-seed", type=int, help="shuffle the samples with this seed")
    p.add_argument(
        "--max-side", type=int_at_least(1), help="shrink images whose longer side exceeds this"
    )
    p.add_argument(
        "--quality",
        type=int_at_least(1, 100),
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
        "--restart-markers",
        action="store_true",
        help="store every JPEG transcoded, losslessly (the same pixels), with restart markers "
        "that split each row of blocks into intervals of at most 64 pixels, so that a crop "
        "decodes only the intervals around it; implies --baseline; needs the C extension "
        "built with libjpeg-turbo",
    )
    p.add_argument(
        "--pixel-budget",
        type=int_at_least(1),
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
        help="kind of source: %(choices)s (default: auto-detect; see SOURCE)",
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
        type=int_at_least(1),
        default=1,
        help="machines sharing the build without a scheduler (SLURM array, Kubernetes "
        "indexed job); with --node-rank, build one node's share of the shards",
    )
    p.add_argument(
        "--node-rank",
        type=int_at_least(0),
        help="this node's share (0 to --num-nodes - 1); once every node is done, one more "
        "call with --resume (and no --node-rank) writes the index and manifest",
    )
    p.set_defaults(handler=_run_build)


def _source(sources: list[str]) -> str:
    """One source, or several files or URLs (a shell's expansion of `train-*.tfrecord`) as the
    webdataset-style `::` list every container source reads."""
    return sources[0] if len(sources) == 1 else "::".join(sources)


def _run_build(args: argparse.Namespace) -> int:
    from ..compiler import BuildError, BuildOptions, build  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast
    from ..compiler.build_schema import read_build_schema  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast
    from ..compiler.errors import os_error_words  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast
    from ..compiler.images.baseline import RESTART_WIDTH  # noqa: PLC0415 -- on use: keeps `fastpack --help` fast

    given = {
        "shard_size": args.shard_size,
        "quality": args.quality,
        "check": args.check,
        "dictionary_size": args.dictionary_size,
        "pixel_budget": args.pixel_budget,
        "restart_width": RESTART_WIDTH if args.restart_markers else None,
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
