"""What a finished shard job leaves beside its index part: `.fastpack-build/NNNNNN.shard.json`.

A shard is finished when its tar (of the recorded size), its `.idx`, this record and its index
part (`fastpack.formats.part_path`) all exist. The job writes the record and the part before it
renames the tar and the `.idx` into place.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from fastpack.formats import shard_name
from fastpack.formats.layout import SHARD_FORMATS, shard_idx_name

from ..build_dir import BUILD_DIR, temp_path
from ..errors import BuildDirError
from .index_parts import part_path

# (source, reason, field): `field` None for an image the policy rejects
RejectLine = tuple[str, str, str | None]
# (source, note): an input stored otherwise than the options asked (kept as it was where
# --baseline could not transcode it losslessly), and why
KeptLine = tuple[str, str]
# (source, key): an input left out as a duplicate, and the key of the sample it duplicates
DuplicateLine = tuple[str, str]


@dataclass(frozen=True, kw_only=True)
class ShardRecord:
    shard: int
    samples: int
    planned: int
    bytes: int
    sha256: str
    converted: int
    payload_bytes: int
    key_bytes: int
    source_bytes: int
    rejects: tuple[RejectLine, ...]  # in plan order
    crc32c: int | None = None  # None in records of builds before it was written
    kept: tuple[KeptLine, ...] = ()  # in plan order; () in records of builds before it
    index_bytes: int | None = None  # of the `.idx`; None in records of builds before it
    index_sha256: str | None = None
    duplicates: tuple[DuplicateLine, ...] = ()  # in plan order (append --skip-duplicates)


def record_path(out: Path, shard: int) -> Path:
    return out / BUILD_DIR / f"{shard:06d}.shard.json"


def save_record(out: Path, record: ShardRecord) -> None:
    path = record_path(out, record.shard)
    tmp = temp_path(path)
    tmp.write_text(json.dumps(asdict(record), sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def load_record(out: Path, shard: int) -> ShardRecord:
    """The record of a finished shard; BuildDirError if it is missing or unreadable."""
    path = record_path(out, shard)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise BuildDirError(f"{path}: shard record missing; remove {out} and build again") from e
    except UnicodeDecodeError as e:
        raise _unreadable(str(path), str(out), e) from e
    return parse_record(text, str(path), str(out))


def _unreadable(where: str, out: str, e: Exception) -> BuildDirError:
    return BuildDirError(
        f"{where}: unreadable shard record ({e!r}); the build directory is damaged: "
        f"remove {out} and build again"
    )


def parse_record(text: str, where: str, out: str) -> ShardRecord:
    """A record from its JSON text; BuildDirError naming `where` (and `out`) if unreadable."""
    try:
        data = json.loads(text)
        data["rejects"] = tuple(_reject_line(*line) for line in data["rejects"])
        data["kept"] = tuple((str(source), str(note)) for source, note in data.get("kept", ()))
        data["duplicates"] = tuple(
            (str(source), str(key)) for source, key in data.get("duplicates", ())
        )
        return ShardRecord(**data)
    except (ValueError, KeyError, TypeError) as e:  # not JSON, or not a record's keys
        raise _unreadable(where, out, e) from e


def _reject_line(source: str, reason: str, field: str | None = None) -> RejectLine:
    return source, reason, field


def shard_file_name(out: Path, shard: int) -> str | None:
    """The name of shard `shard`'s file in `out` (a tar or a TFRecord file), if there is one."""
    for shard_format in SHARD_FORMATS:
        name = shard_name(shard, shard_format)
        if (out / name).exists():
            return name
    return None


def finished_record(out: Path, shard: int) -> ShardRecord | None:
    """The shard's record if the shard is finished and its file has the recorded size, else
    None."""
    needed = (out / shard_idx_name(shard), part_path(out, shard), record_path(out, shard))
    name = shard_file_name(out, shard)
    if name is None or not all(p.exists() for p in needed):
        return None
    record = load_record(out, shard)
    try:
        size = os.path.getsize(out / name)
    except FileNotFoundError:
        return None
    return record if size == record.bytes else None
