"""What a source scan yields: one `PlanRow` per input, in the source's canonical order."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from fastpack.formats import Schema
from fastpack.formats.schema import V1_SCHEMA

from ..build_schema import BuildSchema
from .labels import LabelTable

# `PlanRow.container` of an image that is a file, in a scan that also has containers
NO_CONTAINER = 2**32 - 1


class PlanRow(NamedTuple):
    """One input. `source` is its path relative to the scan's root (filesystem bytes), or
    `<tar name>:<key>` for a tar member; `container` and `offset` locate a tar member's data
    (`NO_CONTAINER`: the image is the file `source`, in a scan with containers). `label` is the
    label field's value (-1 for a schema without one); `fields` the sample's other fields
    (`sample_fields.pack_fields`)."""

    source: bytes
    label: int
    size: int
    container: int = 0
    offset: int = 0
    fields: bytes = b""


@dataclass(frozen=True, kw_only=True)
class SourceScan:
    """A source opened for planning. `rows` is consumed once, streaming.

    Labels are final when `labels` is None (with `classes` their names); otherwise they are ids
    of `labels`, mapped once the scan is over. `schema` is the dataset's: the image field, the
    label field, then the rest, in tar order. `containers` (paths relative to `root`, or
    absolute) may grow while `rows` is consumed (a spill file); read it after. A scan of a
    source on an object store has `url`, the URL that sources are relative to, instead of
    `root`. `text_cells` says its inline field values are a list file's cell text (CSV, TSV), to
    be parsed by the shard jobs.
    """

    kind: str
    root: Path
    rows: Iterator[PlanRow]
    classes: tuple[str, ...] = ()
    labels: LabelTable | None = None
    containers: Sequence[str] = ()
    schema: Schema = V1_SCHEMA
    url: str | None = None
    text_cells: bool = False


@dataclass(frozen=True, kw_only=True)
class SourceOptions:
    """What a build tells its source scan: the fields to store (None: the source's own, or image
    and class), where images named by relative paths live when not beside the source file
    (COCO), and whether to render masks from polygons (COCO)."""

    schema: BuildSchema | None = None
    images_root: Path | None = None
    render_masks: bool = False
    workers: int | None = None  # processes a scan may use (None: one per core)
