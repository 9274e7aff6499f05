"""The options of a build and the summary it returns."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from fastpack.formats import Manifest
from fastpack.formats.image_header import DEFAULT_PIXEL_BUDGET
from fastpack.formats.layout import SHARD_FORMATS

from .build_schema import DEFAULT_BUILD_SCHEMA, BuildSchema
from .errors import BuildError, SourceError
from .images.baseline import MAX_RESTART_WIDTH, require_baseline
from .images.policy import CHECKS, Check
from .sources.registry import source_formats
from .sources.scan import SourceOptions

# "auto" or a registered source kind (`sources.registry.SOURCES`: folder, list, wds, coco, parquet,
# tfrecord and any a caller registers)
SourceFormat = str
ShardFormat = Literal["tar", "tfrecord"]
MAX_QUALITY = 100  # JPEG quality of re-encoded images: 1 to this
MIN_DICTIONARY_SIZE = 256  # bytes of a trained zstd dictionary, at least
MIN_RATE_SECONDS = 0.1  # shorter runs (a resume with nothing left to do) show no rates
# The output-shaping options that `BuildOptions.shaping` records only where set
RECORDED_WHERE_SET = frozenset(
    {
        "schema",
        "dictionary_size",
        "images_root",
        "render_masks",
        "shard_format",
        "baseline",
        "restart_width",
        "pixel_budget",
    }
)
MAX_LISTED_NOTES = 20  # inputs stored otherwise than asked that a summary lists by name


@dataclass(frozen=True, kw_only=True)
class BuildOptions:
    workers: int | None = None  # None: os.cpu_count()
    shard_size: int = 256 * 2**20  # target bytes per shard
    shuffle_seed: int | None = None  # permute samples at build time
    max_side: int | None = None  # re-encode images whose longer side exceeds this
    quality: int = 90  # JPEG quality of re-encoded images
    check: Check = "structure"  # how JPEGs kept byte-for-byte are checked (image_policy)
    baseline: bool = False  # store progressive JPEGs transcoded to baseline (losslessly)
    # store JPEGs transcoded (losslessly) with restart markers that split each MCU row into
    # intervals about this many pixels wide (RESTART_WIDTH: --restart-markers); 0: as they are
    restart_width: int = 0
    # samples (width x height x components) an input's header may declare; more is a reject
    pixel_budget: int = DEFAULT_PIXEL_BUDGET
    strict: bool = False  # a reject fails the build (BuildError) instead
    resume: bool = False  # skip the finished shards of an interrupted build
    source_format: SourceFormat = "auto"
    progress: bool = True  # progress bar (samples/s, MB/s, ETA) on stderr
    schema: BuildSchema | None = None  # the fields to store; None: the source's own
    dictionary_size: int = 64 * 1024  # bytes of each trained zstd dictionary, at most
    images_root: str | None = None  # where a COCO source's images live
    render_masks: bool = False  # COCO: render each image's instance masks into a PNG field
    shard_format: ShardFormat = "tar"  # or "tfrecord": TFRecord shards of tf.train.Example
    num_nodes: int = 1  # machines sharing the shard jobs without a scheduler
    node_rank: int | None = None  # this machine's share: shards s with s % num_nodes == rank

    def __post_init__(self) -> None:
        if self.num_nodes < 1 or (
            self.node_rank is not None and not 0 <= self.node_rank < self.num_nodes
        ):
            raise BuildError(
                f"build options num_nodes={self.num_nodes}, node_rank={self.node_rank}: "
                "expected num_nodes >= 1 and 0 <= node_rank < num_nodes"
            )
        if self.num_nodes > 1 and self.node_rank is None and not self.resume:
            raise BuildError(
                f"build option num_nodes={self.num_nodes} needs node_rank (this node's share, "
                "0 to num_nodes - 1), or resume (the call that finishes the build)"
            )
        if self.source_format not in (formats := source_formats()):
            raise SourceError(
                f"unknown source format {self.source_format!r}; "
                f"expected one of {', '.join(formats)}"
            )
        if self.shard_format not in SHARD_FORMATS:
            raise BuildError(
                f"build option shard_format={self.shard_format!r}: expected one of "
                f"{', '.join(SHARD_FORMATS)}"
            )
        if self.check not in CHECKS:
            raise BuildError(
                f"build option check={self.check!r}: expected one of {', '.join(CHECKS)}"
            )
        if self.baseline or self.restart_width:
            require_baseline()  # refused here, before any work, where it is not built
        checks = (
            ("workers", self.workers, self.workers is None or self.workers >= 1, ">= 1 or None"),
            ("shard_size", self.shard_size, self.shard_size >= 1, ">= 1"),
            ("max_side", self.max_side, self.max_side is None or self.max_side >= 1,
             ">= 1 or None"),
            ("quality", self.quality, 1 <= self.quality <= MAX_QUALITY, f"in 1..{MAX_QUALITY}"),
            ("restart_width", self.restart_width,
             type(self.restart_width) is int and 0 <= self.restart_width <= MAX_RESTART_WIDTH,
             f"an int in 0..{MAX_RESTART_WIDTH}"),
            ("pixel_budget", self.pixel_budget,
             type(self.pixel_budget) is int and self.pixel_budget >= 1, "an int >= 1"),
            ("dictionary_size", self.dictionary_size, self.dictionary_size >= MIN_DICTIONARY_SIZE,
             f">= {MIN_DICTIONARY_SIZE}"),
        )  # fmt: skip
        for name, value, ok, expected in checks:
            if not ok:
                raise BuildError(f"build option {name}={value!r}: expected {expected}")

    def shaping(self) -> dict[str, Any]:
        """The options that shape the output bytes (a resume must not change them). `check`
        decides which inputs are rejected, hence which samples the shards hold. The options of
        multi-field builds, `baseline` and a `pixel_budget` other than the default appear only
        where set, so that an image + class build records what it always did. The budget
        decides which inputs are rejected, as `check` does."""
        shaping: dict[str, Any] = {
            "shard_size": self.shard_size,
            "shuffle_seed": self.shuffle_seed,
            "max_side": self.max_side,
            "quality": self.quality,
            "check": self.check,
        }
        if self.schema is not None and self.schema != DEFAULT_BUILD_SCHEMA:
            shaping["schema"] = self.schema.to_json()
            if any(f.train_dictionary for f in self.schema.fields):
                shaping["dictionary_size"] = self.dictionary_size
        if self.images_root is not None:
            shaping["images_root"] = os.path.abspath(self.images_root)
        if self.render_masks:
            shaping["render_masks"] = True
        if self.baseline:
            shaping["baseline"] = True
        if self.restart_width:
            shaping["restart_width"] = self.restart_width
        if self.pixel_budget != DEFAULT_PIXEL_BUDGET:
            shaping["pixel_budget"] = self.pixel_budget
        if self.shard_format != "tar":
            shaping["shard_format"] = self.shard_format
        return shaping

    @property
    def node_share(self) -> bool:
        """Whether this call builds one node's share of the shard jobs."""
        return self.node_rank is not None and self.num_nodes > 1

    def source_options(self) -> SourceOptions:
        """What the source scan is told."""
        root = Path(self.images_root) if self.images_root is not None else None
        return SourceOptions(
            schema=self.schema,
            images_root=root,
            render_masks=self.render_masks,
            workers=self.workers,
        )


def _megabytes(n: int) -> str:
    return f"{n / 1e6:,.1f} MB"


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


@dataclass(frozen=True, kw_only=True)
class BuildSummary:
    inputs: int
    samples: int
    shards: int
    bytes: int  # total size of the shards
    rejected: int
    converted: int
    seconds: float
    notes: tuple[str, ...] = ()  # lines after the summary: per cluster worker, or what is left
    # inputs stored otherwise than asked, and why: (path, note), in plan order; a summary read
    # back from a finished dataset's manifest has their count only (`not_transcoded`)
    kept: tuple[tuple[str, str], ...] = ()
    not_transcoded: int = 0  # progressive JPEGs kept as they were by --baseline

    @classmethod
    def of_manifest(cls, manifest: Manifest, seconds: float) -> BuildSummary:
        """The summary of the finished dataset that `manifest` describes, wherever it lies."""
        stats = manifest.stats
        return cls(
            inputs=stats["inputs"],
            samples=manifest.num_samples,
            shards=len(manifest.shards),
            bytes=sum(s.bytes for s in manifest.shards),
            rejected=stats["rejected"],
            converted=stats["converted"],
            seconds=seconds,
            not_transcoded=stats.get("not_transcoded", 0),
        )

    def _kept_lines(self) -> str:
        if not self.not_transcoded:
            return ""
        lines = [
            f"\n{_count(self.not_transcoded, 'progressive JPEG')} stored as "
            f"{'it was' if self.not_transcoded == 1 else 'they were'}, not transcoded to "
            "baseline: the transcode would change pixels"
            + (":" if self.kept else " (stats.not_transcoded in the manifest)")
        ]
        lines += [f"\n  {path}: {note}" for path, note in self.kept[:MAX_LISTED_NOTES]]
        if len(self.kept) > MAX_LISTED_NOTES:
            lines.append(f"\n  ... and {len(self.kept) - MAX_LISTED_NOTES:,} more")
        return "".join(lines)

    def format(self) -> str:
        """The closing summary of a build."""
        rates = ""
        if self.seconds >= MIN_RATE_SECONDS:
            rates = (
                f" ({self.inputs / self.seconds:,.0f} inputs/s, "
                f"{_megabytes(int(self.bytes / self.seconds))}/s)"
            )
        return (
            f"{_count(self.samples, 'sample')} from {_count(self.inputs, 'input')} in "
            f"{_count(self.shards, 'shard')} ({_megabytes(self.bytes)}) in {self.seconds:.1f} s"
            f"{rates}\n{self.converted:,} converted to RGB JPEG, {self.rejected:,} rejected"
            + (" (listed in rejects.jsonl)" if self.rejected else "")
            + self._kept_lines()
            + "".join(f"\n{line}" for line in self.notes)
        )
