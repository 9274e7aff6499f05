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
from .plan_base import PlanBase, extend_classes
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


def _labels(  # noqa: PLR0913 -- keyword inputs
    source: str,
    scan: SourceScan,
    directory: Path,
    inputs: int,
    *,
    base: PlanBase | None,
    schema: Schema,
) -> tuple[str, ...]:
    """The plan's classes, its stored labels made final: the scan's label ids mapped to its
    classes' order, then, for a plan that continues a dataset, to the dataset's classes
    extended by the scan's new names."""
    classes, lookup = scan.classes, None
    if scan.labels is not None:
        classes, lookup = scan.labels.finish()
    if base is not None:
        base.check_schema(source, schema)
        base.check_keys(source, inputs)
        labelled = schema.label_field is not None
        classes, extended = extend_classes(source, base.classes, classes, labelled)
        if extended is not None:
            lookup = extended if lookup is None else extended[lookup]
    if lookup is not None:
        remap_labels(directory, inputs, lookup)
    return classes


def make_plan(  # noqa: PLR0913 -- keyword inputs
    source: str | os.PathLike[str],
    kind: str,
    directory: Path,
    *,
    shard_size: int,
    shuffle_seed: int | None,
    options: SourceOptions | None = None,
    base: PlanBase | None = None,
) -> PlanMeta:
    """Write the plan of `source` (a `kind` source) into `directory`; `plan.json` goes last.

    A webdataset source copies its remote shards into `directory` (see `sources.wds`). A plan
    with a `base` continues a dataset (an append): its keys follow the dataset's plan
    positions at the dataset's key width, and its classes extend the dataset's."""
    scan = open_source(source, kind, directory, options)
    with PlanWriter(directory, members=source_of(kind, source).member_images) as writer:
        for row in scan.rows:
            writer.add(row)
        inputs, total_size = writer.close()
    if inputs == 0:
        raise SourceError(f"{source}: no images found in this {kind} source")
    wanted = options.schema if options is not None else None
    schema = schema_in_force(scan, wanted)
    classes = _labels(str(source), scan, directory, inputs, base=base, schema=schema)
    if shuffle_seed is not None:
        write_order(directory, inputs, shuffle_seed)
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
        key_width=key_width(inputs) if base is None else base.key_width,
        shuffled=shuffle_seed is not None,
        schema=None if schema.is_v1 else schema.to_json(),
        fields=writer.has_fields,
        text_cells=scan.text_cells,
        train=tuple(name for name in train if name in schema),
        key_base=0 if base is None else base.key_base,
    )
    write_meta(directory, meta)
    return meta
