"""Writing a version-2 dataset straight from typed samples, with the format's own writers (no
compiler): what reader, interop and format tests build their multi-field datasets with."""

from __future__ import annotations

import dataclasses
import hashlib
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from fastpack.formats import (
    ABSENT,
    INDEX_NAME,
    MANIFEST_NAME,
    FieldSpec,
    IndexPart,
    IndexWriter,
    Manifest,
    Schema,
    ShardInfo,
    Zstd,
    encode_value,
    write_manifest,
)
from fastpack.formats.checksum import file_sha256
from fastpack.formats.field_codec import FieldCodec, train_dictionary
from fastpack.formats.layout import sample_key, shard_idx_name, shard_tar_name
from fastpack.formats.manifest import version_for
from fastpack.formats.schema import Dictionary, FileInfo, dictionary_name
from fastpack.formats.string_table import pack_strings
from fastpack.formats.tar_shard import MemberLocation, TarShardWriter
from fastpack.formats.wds_index import format_wds_index

Sample = Mapping[str, Any]  # field name -> value; a missing name: the member is absent


def _with_dictionaries(root: Path, schema: Schema, samples: Sequence[Sample]) -> Schema:
    """The schema with a trained dictionary for each zstd field that asks for one (a
    `Dictionary` placeholder of any name); the dictionaries written under `root/dicts/`."""
    specs = []
    for spec in schema.fields:
        if spec.zstd is not None and spec.zstd.dictionary is not None:
            raw = [encode_value(spec, s[spec.name]) for s in samples if spec.name in s]
            trained = train_dictionary(raw, 4096)
            if trained is None:
                raise ValueError(f"{spec.name}: too few samples to train a dictionary")
            name = dictionary_name(spec.name)
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_bytes(trained)
            d = Dictionary(
                name=name, bytes=len(trained), sha256=hashlib.sha256(trained).hexdigest()
            )
            specs.append(dataclasses.replace(spec, zstd=Zstd(level=spec.zstd.level, dictionary=d)))
        else:
            specs.append(spec)
    return Schema(tuple(specs))


def _codecs(root: Path, schema: Schema) -> dict[str, FieldCodec]:
    codecs = {}
    for spec in schema.fields:
        d = spec.zstd.dictionary if spec.zstd is not None else None
        codecs[spec.name] = FieldCodec(spec, (root / d.name).read_bytes() if d else None)
    return codecs


def write_v2_dataset(
    root: Path,
    schema: Schema,
    samples: Sequence[Sample],
    *,
    samples_per_shard: int = 4,
    classes: Sequence[str] = (),
) -> Manifest:
    """`samples` as a dataset in `root`, in order, `samples_per_shard` to a shard. A zstd field
    whose spec has a dictionary gets one trained on these samples."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "shards").mkdir(exist_ok=True)
    schema = _with_dictionaries(root, schema, samples)
    codecs, names = _codecs(root, schema), schema.names
    label_field = schema.label_field
    width = 9
    parts, infos = [], []
    starts = range(0, max(len(samples), 1), samples_per_shard)
    for shard, start in enumerate(starts):
        chunk = samples[start : start + samples_per_shard]
        path = root / shard_tar_name(shard)
        locations: list[list[MemberLocation]] = []
        offsets = {f: np.full(len(chunk), ABSENT, "<u8") for f in names}
        sizes = {f: np.zeros(len(chunk), "<u8") for f in names}
        crcs = {f: np.zeros(len(chunk), "<u4") for f in names}
        with path.open("wb") as file:
            writer = TarShardWriter(file)
            for k, sample in enumerate(chunk):
                members = [(f, codecs[f].encode(sample[f])) for f in names if f in sample]
                placed = writer.add_sample(sample_key(start + k, width), members)
                locations.append(placed)
                for (f, data), where in zip(members, placed, strict=True):
                    offsets[f][k], sizes[f][k] = where.data_offset, where.size
                    crcs[f][k] = zlib.crc32(data)
            size = writer.finish()
        (root / shard_idx_name(shard)).write_text(format_wds_index(locations), encoding="ascii")
        keys = pack_strings(sample_key(start + k, width) for k in range(len(chunk)))
        sources = pack_strings(f"sample-{start + k}" for k in range(len(chunk)))
        labels = [int(s.get(label_field, -1)) if label_field else -1 for s in chunk]
        parts.append(
            IndexPart(
                shard=shard,
                labels=np.array(labels, "<i8"),
                key_blob=keys[0],
                key_offsets=keys[1],
                source_blob=sources[0],
                source_offsets=sources[1],
                offsets=offsets,
                sizes=sizes,
                crc32=crcs,
            )
        )
        infos.append(
            ShardInfo(
                name=shard_tar_name(shard),
                index_name=shard_idx_name(shard),
                samples=len(chunk),
                bytes=size,
                sha256=file_sha256(path),
            )
        )
    version = version_for(schema)
    with IndexWriter(
        path=root / INDEX_NAME,
        num_samples=len(samples),
        num_shards=len(parts),
        fields=names,
        key_blob_size=sum(len(p.key_blob) for p in parts),
        source_blob_size=sum(len(p.source_blob) for p in parts),
        version=version,
    ) as index:
        for part in parts:
            index.append(part)
    manifest = Manifest(
        version=version,
        schema=schema,
        num_samples=len(samples),
        fields=names,
        classes=tuple(classes),
        key_width=width,
        shards=tuple(infos),
        index=FileInfo(
            name=INDEX_NAME,
            bytes=(root / INDEX_NAME).stat().st_size,
            sha256=file_sha256(root / INDEX_NAME),
        ),
        build={"source_kind": "test"},
        stats={"samples": len(samples)},
    )
    write_manifest(root / MANIFEST_NAME, manifest)
    return manifest


def wants_dictionary(field: str, level: int = 3) -> Zstd:
    """A `Zstd` for field `field` that asks `write_v2_dataset` to train a dictionary."""
    return Zstd(level=level, dictionary=Dictionary(name=dictionary_name(field), bytes=0, sha256=""))


def spec(name: str, kind: str, **options: Any) -> FieldSpec:
    return FieldSpec(name=name, type=kind, **options)
