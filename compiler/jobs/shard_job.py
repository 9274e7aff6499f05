"""One shard job: a contiguous range of the plan into `shards/NNNNNN.tar` (or `.tfrecord`) +
`.idx`, crash-safe.

The shard and `.idx` are written under temporary names (unique per process, so that a job left
running by a killed build never shares a file with the job that redoes it), then the shard record
and index part are saved, then both files are renamed into place.

An input's content never fails a job: the image policy and the sample encoder turn whatever a
decoder or parser raises into a reject. What does fail it is the machine's, each named: an
OSError of the build's own files (`OutputError`, naming the shard and the file) and a
MemoryError while preparing an input (`BuildMemoryError`, naming the input and the budget).

A job of an append that skips duplicates (`ShardJob.duplicates`) leaves out an input whose
bytes the dataset stores or an earlier new input has (`duplicates`): neither stored nor
rejected, it is listed in the shard record's `duplicates`.
"""

from __future__ import annotations

import hashlib
import io
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, NoReturn

import numpy as np
import numpy.typing as npt
from fastpack.formats import FastpackError, Schema, shard_name
from fastpack.formats.checksum import crc32c_extend
from fastpack.formats.image_header import DEFAULT_PIXEL_BUDGET
from fastpack.formats.layout import sample_key, shard_idx_name
from fastpack.formats.manifest import DEFAULT_FIELDS

from ..build_dir import BUILD_DIR, temp_path
from ..errors import BuildError, BuildMemoryError, OutputError, os_error_words
from ..images.policy import Check, PreparedImage, Reject
from ..planning.plan_slice import PlanRows
from ..sources.sample_fields import WHOLE_SAMPLE, InvalidValue, unpack_fields
from .dictionaries import load_dictionaries
from .duplicates import Duplicates, StoredDataset
from .field_values import unpack_shard
from .index_parts import part_path, save_part
from .inputs import InputReader
from .sample_encoder import FieldReject, ImageOptions, SampleEncoder
from .shard_record import ShardRecord, save_record
from .shard_rows import ShardRows
from .shard_sinks import ShardSink, open_sink

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
    schema: Schema | None = None  # the dataset's, with its dictionaries; None: V1_SCHEMA
    shard_format: str = "tar"  # or "tfrecord"
    # the schema's dictionaries by field, where the job cannot read them from `out`
    dictionaries: Mapping[str, bytes] | None = None
    baseline: bool = False  # progressive JPEGs kept as they are are transcoded to baseline
    restart_width: int = 0  # JPEGs transcoded with restart markers about this many px apart
    pixel_budget: int = DEFAULT_PIXEL_BUDGET  # samples an input's header may declare
    # the dataset an append grows, where inputs it holds already are left out (`duplicates`)
    duplicates: StoredDataset | None = None


class _ChecksumSink(io.RawIOBase):
    """A raw file that hashes every byte written through it: SHA-256 and CRC-32C."""

    def __init__(self, file: io.FileIO) -> None:
        self._file = file
        self.hash = hashlib.sha256()
        self.crc32c = 0

    def writable(self) -> bool:
        return True

    def write(self, data: ReadableBuffer) -> int:
        n = self._file.write(data) or 0
        written = memoryview(data).cast("B")[:n]
        self.hash.update(written)
        self.crc32c = crc32c_extend(self.crc32c, written)
        return n


def _image_options(job: ShardJob) -> ImageOptions:
    return ImageOptions(
        max_side=job.max_side,
        quality=job.quality,
        check=job.check,
        baseline=job.baseline,
        restart_width=job.restart_width,
        pixel_budget=job.pixel_budget,
        strict=job.strict,
    )


def _prepare(
    job: ShardJob, images: ImageOptions, data: bytes | Reject, source: bytes
) -> PreparedImage | Reject:
    if isinstance(data, Reject):
        return data
    try:
        return images.prepare(data)
    except MemoryError as e:
        raise BuildMemoryError(
            f"shard {job.shard}: out of memory preparing {source.decode('utf-8', 'replace')} "
            f"({len(data):,} bytes) within the pixel budget of {job.pixel_budget:,} samples: "
            "give the build more memory or fewer workers, or a lower --pixel-budget"
        ) from e


def _note_kept(job: ShardJob, rows: ShardRows, source: str, image: PreparedImage) -> None:
    """Note an image stored otherwise than asked (its `note`: kept as it was, not transcoded);
    under `strict` it is a reject, which stops the build."""
    if image.note is not None:
        if job.strict:
            _stop(source, image.note, None)
        rows.kept.append((source, image.note))


def _unreadable(sizes: list[int], packed: list[bytes], k: int) -> str | None:
    """Why row `k` cannot be read at all, where its scan said so (`WHOLE_SAMPLE`: a damaged
    TFRecord record, whose row has an empty image), else None."""
    if sizes[k] or not packed[k]:
        return None
    value = unpack_fields(packed[k]).get(WHOLE_SAMPLE)
    return value.reason if isinstance(value, InvalidValue) else None


def _stop(source: str, reason: str, name: str | None) -> NoReturn:
    """The error of a strict build at a reject."""
    where = f"{source}: field {name!r}" if name is not None else source
    raise BuildError(f"{where}: {reason} (a strict build stops at a reject)")


def _reject(job: ShardJob, rows: ShardRows, source: str, reason: str, name: str | None) -> None:
    if job.strict:
        _stop(source, reason, name)
    rows.rejects.append((source, reason, name))


class _Inputs(NamedTuple):
    """The plan's rows of one shard, as lists."""

    start: int
    inputs: npt.NDArray[np.int64]
    sources: list[bytes]
    labels: list[int]
    sizes: list[int]
    containers: list[int]
    offsets: list[int]

    def read(self, reader: InputReader, k: int) -> bytes | Reject:
        return reader.read(self.sources[k], self.containers[k], self.offsets[k], self.sizes[k])


class _Duplicate(NamedTuple):
    """An input left out as a duplicate: the key of the sample it duplicates, and its bytes
    read (0 where the list made before the jobs named it: it is not read)."""

    key: str
    nbytes: int


def _duplicates(job: ShardJob) -> Duplicates:
    return Duplicates(job.duplicates, Path(job.out) / BUILD_DIR)


def _read(
    skip: Duplicates, shard: _Inputs, reader: InputReader, k: int
) -> bytes | Reject | _Duplicate:
    """Row `k`'s bytes, or `_Duplicate` where it is a duplicate: listed at its plan position,
    or its bytes stored in the dataset already."""
    listed = skip.listed(shard.start + k)
    if listed is not None:
        return _Duplicate(listed, 0)
    data = shard.read(reader, k)
    if isinstance(data, Reject):
        return data
    stored = skip.stored(data)
    return data if stored is None else _Duplicate(stored, len(data))


def _left_out(rows: ShardRows, source: str, data: _Duplicate, progress: Progress) -> None:
    """Note a duplicate: not stored, and not a reject."""
    progress(1, data.nbytes)
    rows.duplicates.append((source, data.key))


def _inputs(job: ShardJob, plan: PlanRows) -> _Inputs:
    meta = plan.meta
    start, stop = meta.shard_range(job.shard)
    inputs = plan.inputs(start, stop)
    sources, labels = plan.sources(inputs), plan.column("label", inputs).tolist()
    sizes = plan.column("size", inputs).tolist()
    members = bool(meta.containers)
    containers = plan.column("container", inputs).tolist() if members else [0] * len(inputs)
    offsets = plan.column("offset", inputs).tolist() if members else [0] * len(inputs)
    return _Inputs(start, inputs, sources, labels, sizes, containers, offsets)


def _write_samples(job: ShardJob, plan: PlanRows, sink: ShardSink, progress: Progress) -> ShardRows:
    """The samples of an image + class plan (V1_SCHEMA): no per-sample work for fields."""
    meta, rows, shard = plan.meta, ShardRows(), _inputs(job, plan)
    labels, images = shard.labels, _image_options(job)
    packed = plan.fields(shard.inputs)  # empty unless a scan rejected whole rows
    with InputReader(meta) as reader, _duplicates(job) as skip:
        for k, source_bytes in enumerate(shard.sources):
            source = source_bytes.decode("utf-8", "replace")
            unreadable = _unreadable(shard.sizes, packed, k)
            if unreadable is not None:
                progress(1, 0)
                _reject(job, rows, source, unreadable, None)
                continue
            data = _read(skip, shard, reader, k)
            if isinstance(data, _Duplicate):
                _left_out(rows, source, data, progress)
                continue
            image = _prepare(job, images, data, source_bytes)
            progress(1, 0 if isinstance(data, Reject) else len(data))
            if isinstance(image, Reject):
                _reject(job, rows, source, image.reason, None)
                continue
            _note_kept(job, rows, source, image)
            payloads = [image.data, str(labels[k]).encode("ascii")]
            key = sample_key(meta.key_base + shard.start + k, meta.key_width)
            members = list(zip(DEFAULT_FIELDS, payloads, strict=True))
            locations, stored = sink.add(key, members, image.size)
            rows.add(key, source, labels[k], locations, stored)
            rows.converted += image.converted
    return rows


def _write_field_samples(
    job: ShardJob, schema: Schema, plan: PlanRows, sink: ShardSink, progress: Progress
) -> ShardRows:
    """The samples of a plan of any other schema: each one's fields by `SampleEncoder`."""
    meta, rows, shard = plan.meta, ShardRows(), _inputs(job, plan)
    packed = plan.fields(shard.inputs)
    has_image = schema.image_field is not None
    images = _image_options(job)
    dictionaries = job.dictionaries
    if dictionaries is None:
        dictionaries = load_dictionaries(Path(job.out), schema)
    with InputReader(meta) as reader, _duplicates(job) as skip:
        encoder = SampleEncoder(schema, dictionaries, reader, images, text_cells=meta.text_cells)
        values = unpack_shard(packed)
        encoder.prepare(values)  # the shard's inline values, a field at a time
        for k, source_bytes in enumerate(shard.sources):
            source = source_bytes.decode("utf-8", "replace")
            unreadable = _unreadable(shard.sizes, packed, k)
            if unreadable is not None:
                progress(1, 0)
                _reject(job, rows, source, unreadable, None)
                continue
            image, nbytes = None, 0
            if has_image:
                data = _read(skip, shard, reader, k)
                if isinstance(data, _Duplicate):
                    _left_out(rows, source, data, progress)
                    continue
                image = _prepare(job, images, data, source_bytes)
                nbytes = 0 if isinstance(data, Reject) else len(data)
            progress(1, nbytes)
            if isinstance(image, Reject):
                _reject(job, rows, source, image.reason, None)
                continue
            encoded = encoder.encode_row(image, shard.labels[k], values[k], k)
            if isinstance(encoded, FieldReject):
                _reject(job, rows, source, encoded.reason, encoded.field)
                continue
            if image is not None:
                _note_kept(job, rows, source, image)
            rows.kept.extend((source, note) for note in encoded.notes)
            key = sample_key(meta.key_base + shard.start + k, meta.key_width)
            size = image.size if image is not None else None
            locations, stored = sink.add(key, encoded.members, size)
            rows.add(key, source, encoded.label, locations, stored)
            rows.positions.append(encoded.positions)
            rows.converted += image.converted if image is not None else 0
    return rows


def run_shard_job(job: ShardJob, plan: PlanRows, progress: Progress) -> ShardRecord:
    """Write shard `job.shard` (module docstring); OutputError where the machine refuses one
    of the build's files."""
    try:
        return _run_shard_job(job, plan, progress)
    except OSError as e:
        if isinstance(e, FastpackError):  # a store that stays unavailable: named already
            raise
        shard = Path(job.out) / shard_name(job.shard, job.shard_format)
        raise OutputError(f"shard {job.shard}: {os_error_words(e, shard)}") from e


def _run_shard_job(job: ShardJob, plan: PlanRows, progress: Progress) -> ShardRecord:
    out = Path(job.out)
    shard_path = out / shard_name(job.shard, job.shard_format)
    idx_path = out / shard_idx_name(job.shard)
    shard_tmp, idx_tmp = temp_path(shard_path), temp_path(idx_path)
    try:
        with io.FileIO(shard_tmp, "w") as raw:
            sink = _ChecksumSink(raw)
            with io.BufferedWriter(sink, WRITE_BUFFER) as buffered:
                shard = open_sink(buffered, job.shard_format, job.schema)
                if job.schema is None:
                    rows = _write_samples(job, plan, shard, progress)
                else:
                    rows = _write_field_samples(job, job.schema, plan, shard, progress)
                size = shard.finish()
        idx = shard.dali_index().encode("ascii")
        idx_tmp.write_bytes(idx)
    except BaseException:
        shard_tmp.unlink(missing_ok=True)
        raise
    names = DEFAULT_FIELDS if job.schema is None else job.schema.names
    part = rows.part(job.shard, names)
    start, stop = plan.meta.shard_range(job.shard)
    record = ShardRecord(
        shard=job.shard,
        samples=len(rows),
        planned=stop - start,
        bytes=size,
        sha256=sink.hash.hexdigest(),
        crc32c=sink.crc32c,
        index_bytes=len(idx),
        index_sha256=hashlib.sha256(idx).hexdigest(),
        converted=rows.converted,
        payload_bytes=int(sum(part.sizes[f].sum() for f in names)),
        key_bytes=len(part.key_blob),
        source_bytes=len(part.source_blob),
        rejects=tuple(rows.rejects),
        kept=tuple(rows.kept),
        duplicates=tuple(rows.duplicates),
    )
    save_record(out, record)
    save_part(part_path(out, job.shard), part, names)
    os.replace(shard_tmp, shard_path)
    os.replace(idx_tmp, idx_path)
    return record
