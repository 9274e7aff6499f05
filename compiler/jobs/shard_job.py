"""One shard job: a contiguous range of the plan into `shards/NNNNNN.tar` + `.idx`, crash-safe.

The tar and `.idx` are written under temporary names (unique per process, so that a job left
running by a killed build never shares a file with the job that redoes it), then the shard record
and index part are saved, then both files are renamed into place.
"""

from __future__ import annotations

import hashlib
import io
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from fastpack.formats import (
    DEFAULT_FIELDS,
    IndexPart,
    MemberLocation,
    TarShardWriter,
    format_wds_index,
    pack_strings,
    sample_key,
    shard_idx_name,
    shard_tar_name,
)

from ..errors import BuildError
from ..images.policy import Check, PreparedImage, Reject, prepare_image
from ..planning.plan_store import Plan
from .index_parts import part_path, save_part
from .inputs import InputReader
from .shard_record import ShardRecord, save_record

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer

WRITE_BUFFER = 4 << 20
Progress = Callable[[int, int], None]  # (inputs done, input bytes read), as increments


@dataclass(frozen=True, kw_only=True)
class ShardJob:
    out: str
    shard: int
    max_side: int | None
    quality: int
    check: Check
    strict: bool


class _Sha256Sink(io.RawIOBase):
    """A raw file that hashes every byte written through it."""

    def __init__(self, file: io.FileIO) -> None:
        self._file = file
        self.hash = hashlib.sha256()

    def writable(self) -> bool:
        return True

    def write(self, data: ReadableBuffer) -> int:
        n = self._file.write(data) or 0
        self.hash.update(memoryview(data)[:n])
        return n


@dataclass
class _Rows:
    """The index rows and bookkeeping of the samples written so far."""

    labels: list[int] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    members: list[list[MemberLocation]] = field(default_factory=list)
    crc32: list[list[int]] = field(default_factory=list)
    rejects: list[tuple[str, str]] = field(default_factory=list)
    converted: int = 0

    def add(self, key: str, source: str, label: int, locations: list[MemberLocation],
            payloads: list[bytes]) -> None:  # fmt: skip
        self.keys.append(key)
        self.sources.append(source)
        self.labels.append(label)
        self.members.append(locations)
        self.crc32.append([zlib.crc32(p) for p in payloads])

    def part(self, shard: int) -> IndexPart:
        key_blob, key_offsets = pack_strings(self.keys)
        source_blob, source_offsets = pack_strings(self.sources)
        shape, fields = (len(self.keys), len(DEFAULT_FIELDS)), range(len(DEFAULT_FIELDS))
        offsets = np.array([[m.data_offset for m in s] for s in self.members], "<u8").reshape(shape)
        sizes = np.array([[m.size for m in s] for s in self.members], "<u8").reshape(shape)
        crc32 = np.array(self.crc32, "<u4").reshape(shape)
        return IndexPart(
            shard=shard,
            labels=np.array(self.labels, "<i8"),
            key_blob=key_blob,
            key_offsets=key_offsets,
            source_blob=source_blob,
            source_offsets=source_offsets,
            offsets={DEFAULT_FIELDS[f]: offsets[:, f].copy() for f in fields},
            sizes={DEFAULT_FIELDS[f]: sizes[:, f].copy() for f in fields},
            crc32={DEFAULT_FIELDS[f]: crc32[:, f].copy() for f in fields},
        )


def _prepare(job: ShardJob, data: bytes | Reject) -> PreparedImage | Reject:
    if isinstance(data, Reject):
        return data
    return prepare_image(data, max_side=job.max_side, quality=job.quality, check=job.check)


def _write_samples(job: ShardJob, plan: Plan, writer: TarShardWriter, progress: Progress) -> _Rows:
    meta, rows = plan.meta, _Rows()
    start, stop = meta.shard_range(job.shard)
    inputs = plan.inputs(start, stop)
    sources, labels = plan.sources(inputs), plan.column("label", inputs).tolist()
    sizes = plan.column("size", inputs).tolist()
    wds = bool(meta.containers)
    containers = plan.column("container", inputs).tolist() if wds else [0] * len(inputs)
    offsets = plan.column("offset", inputs).tolist() if wds else [0] * len(inputs)
    with InputReader(meta) as reader:
        for k, source_bytes in enumerate(sources):
            data = reader.read(source_bytes, containers[k], offsets[k], sizes[k])
            image = _prepare(job, data)
            source = source_bytes.decode("utf-8", "replace")
            progress(1, 0 if isinstance(data, Reject) else len(data))
            if isinstance(image, Reject):
                if job.strict:
                    raise BuildError(f"{source}: {image.reason} (a strict build stops at a reject)")
                rows.rejects.append((source, image.reason))
                continue
            payloads = [image.data, str(labels[k]).encode("ascii")]
            key = sample_key(start + k, meta.key_width)
            locations = writer.add_sample(key, list(zip(DEFAULT_FIELDS, payloads, strict=True)))
            rows.add(key, source, labels[k], locations, payloads)
            rows.converted += image.converted
    return rows


def run_shard_job(job: ShardJob, plan: Plan, progress: Progress) -> ShardRecord:
    out = Path(job.out)
    tar_path, idx_path = out / shard_tar_name(job.shard), out / shard_idx_name(job.shard)
    suffix = f".{os.getpid()}.tmp"
    tar_tmp = tar_path.with_name(tar_path.name + suffix)
    idx_tmp = idx_path.with_name(idx_path.name + suffix)
    try:
        with io.FileIO(tar_tmp, "w") as raw:
            sink = _Sha256Sink(raw)
            with io.BufferedWriter(sink, WRITE_BUFFER) as buffered:
                writer = TarShardWriter(buffered)
                rows = _write_samples(job, plan, writer, progress)
                size = writer.finish()
        idx_tmp.write_text(format_wds_index(rows.members), encoding="ascii")
    except BaseException:
        tar_tmp.unlink(missing_ok=True)
        raise
    part = rows.part(job.shard)
    start, stop = plan.meta.shard_range(job.shard)
    record = ShardRecord(
        shard=job.shard,
        samples=len(rows.keys),
        planned=stop - start,
        bytes=size,
        sha256=sink.hash.hexdigest(),
        converted=rows.converted,
        payload_bytes=int(sum(part.sizes[f].sum() for f in DEFAULT_FIELDS)),
        key_bytes=len(part.key_blob),
        source_bytes=len(part.source_blob),
        rejects=tuple(rows.rejects),
    )
    save_record(out, record)
    save_part(part_path(out, job.shard), part, DEFAULT_FIELDS)
    os.replace(tar_tmp, tar_path)
    os.replace(idx_tmp, idx_path)
    return record
