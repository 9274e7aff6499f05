"""The planning pass: scan the source once, streaming, into the on-disk build plan."""

from __future__ import annotations

import os
from pathlib import Path

from fastpack.formats import key_width

from ..errors import SourceError
from ..sources.detect import open_source
from .plan_store import PlanMeta, PlanWriter, remap_labels, write_meta, write_order

# Tar bytes a sample takes beyond its image: the image's header and on average half a block of
# padding, plus the cls member's header and data block.
SAMPLE_OVERHEAD = 512 + 256 + 2 * 512


def samples_per_shard(inputs: int, total_size: int, shard_size: int) -> int:
    """Samples per shard so that shards of average inputs approach `shard_size` bytes."""
    return max(1, shard_size * inputs // (total_size + SAMPLE_OVERHEAD * inputs))


def make_plan(
    source: str | os.PathLike[str],
    kind: str,
    directory: Path,
    *,
    shard_size: int,
    shuffle_seed: int | None,
) -> PlanMeta:
    """Write the plan of `source` (a `kind` source) into `directory`; `plan.json` goes last.

    A webdataset source copies its remote shards into `directory` (see `sources.wds`)."""
    scan = open_source(source, kind, directory)
    with PlanWriter(directory, members=kind == "wds") as writer:
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
    per_shard = samples_per_shard(inputs, total_size, shard_size)
    meta = PlanMeta(
        kind=kind,
        root=os.path.abspath(scan.root),
        containers=tuple(scan.containers),
        classes=classes,
        num_inputs=inputs,
        total_size=total_size,
        samples_per_shard=per_shard,
        num_shards=-(-inputs // per_shard),
        key_width=key_width(inputs),
        shuffled=shuffle_seed is not None,
    )
    write_meta(directory, meta)
    return meta
