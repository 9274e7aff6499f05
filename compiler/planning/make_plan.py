"""The planning pass: scan the source once, streaming, into the on-disk build plan."""

from __future__ import annotations

import os
from pathlib import Path

from fastpack.formats import Schema
from fastpack.formats.layout import key_width

from ..build_schema import BuildSchema
from ..errors import SourceError
from ..sources.detect import open_source
from ..sources.registry import source_of
from ..sources.scan import SourceOptions, SourceScan
from .plan_store import PlanMeta, PlanWriter, remap_labels, write_meta, write_order

# Tar bytes a sample takes beyond its image: the image's header and on average half a block of
# padding, plus the cls member's header and data block.
SAMPLE_OVERHEAD = 512 + 256 + 2 * 512
# ... and each further member: its header and on average half a block of padding.
MEMBER_OVERHEAD = 512 + 256


def samples_per_shard(inputs: int, total_size: int, shard_size: int, members: int = 2) -> int:
    """Samples per shard so that shards of average inputs approach `shard_size` bytes."""
    overhead = SAMPLE_OVERHEAD + MEMBER_OVERHEAD * max(0, members - 2)
    return max(1, shard_size * inputs // (total_size + overhead * inputs))


def schema_in_force(scan: SourceScan, wanted: BuildSchema | None) -> Schema:
    """The build's schema, or the scan's where the scan found or added fields (a webdataset
    source's unnamed members kept as raw fields follow the build schema's)."""
    if wanted is None:
        return scan.schema
    names = wanted.schema.names
    if scan.schema.names[: len(names)] == names:
        return scan.schema
    return wanted.schema


def make_plan(  # noqa: PLR0913 -- keyword inputs
    source: str | os.PathLike[str],
    kind: str,
    directory: Path,
    *,
    shard_size: int,
    shuffle_seed: int | None,
    options: SourceOptions | None = None,
) -> PlanMeta:
    """Write the plan of `source` (a `kind` source) into `directory`; `plan.json` goes last.

    A webdataset source copies its remote shards into `directory` (see `sources.wds`)."""
    scan = open_source(source, kind, directory, options)
    with PlanWriter(directory, members=source_of(kind, source).member_images) as writer:
        for row in scan.rows:
            writer.add(row)
        inputs, total_size = writer.close()
    if inputs == 0:
        raise SourceError(f"{source}: no images found in this {kind} source")
    classes = scan.classes
    if scan.labels is not None:
        classes, lookup = scan.labels.finish()
        remap_labels(directory, inputs, lookup)
    if shuffle_seed is not None:
        write_order(directory, inputs, shuffle_seed)
    wanted = options.schema if options is not None else None
    schema = schema_in_force(scan, wanted)
    per_shard = samples_per_shard(inputs, total_size, shard_size, len(schema.fields))
    train = tuple(f.spec.name for f in wanted.fields if f.train_dictionary) if wanted else ()
    meta = PlanMeta(
        kind=kind,
        root=scan.url if scan.url is not None else os.path.abspath(scan.root),
        containers=tuple(scan.containers),  # read after the rows: a scan may add containers
        classes=classes,
        num_inputs=inputs,
        total_size=total_size,
        samples_per_shard=per_shard,
        num_shards=-(-inputs // per_shard),
        key_width=key_width(inputs),
        shuffled=shuffle_seed is not None,
        schema=None if schema.is_v1 else schema.to_json(),
        fields=writer.has_fields,
        text_cells=scan.text_cells,
        train=tuple(name for name in train if name in schema),
    )
    write_meta(directory, meta)
    return meta
