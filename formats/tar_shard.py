"""USTAR tar shards (formats/SPEC.md section 4): writing them and scanning their members."""

from __future__ import annotations

import os
import re
import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import BinaryIO

from .errors import ShardFormatError, TruncatedFileError

BLOCK = 512
END_OF_ARCHIVE = bytes(2 * BLOCK)
MAX_NAME_BYTES = 99
_KEY = re.compile(r"[^.\s/]+")
_EXT = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)*")


@dataclass(frozen=True, slots=True)
class MemberLocation:
    """Where one member sits inside a shard."""

    name: str
    header_offset: int
    data_offset: int
    size: int

    @property
    def key(self) -> str:
        return self.name.split(".", 1)[0]

    @property
    def ext(self) -> str:
        return self.name.split(".", 1)[1] if "." in self.name else ""


def check_key(key: str) -> None:
    if not _KEY.fullmatch(key):
        raise ShardFormatError(f"key {key!r}: keys must be non-empty, without '.', '/' or spaces")


def member_header(name: str, size: int) -> bytes:
    """The 512-byte USTAR header of a regular member: mode 0644, uid/gid 0, mtime 0."""
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise ShardFormatError(f"member name {name!r} is over {MAX_NAME_BYTES} bytes")
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 0
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info.tobuf(format=tarfile.USTAR_FORMAT, encoding="utf-8", errors="strict")


def padding(size: int) -> bytes:
    return bytes(-size % BLOCK)


class TarShardWriter:
    """Appends samples to a binary file as contiguous USTAR members."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self.position = 0

    def add_sample(self, key: str, members: Sequence[tuple[str, bytes]]) -> list[MemberLocation]:
        """Write `<key>.<ext>` for each `(ext, data)`, in order; return where each landed."""
        check_key(key)
        locations = []
        for ext, data in members:
            if not _EXT.fullmatch(ext):
                raise ShardFormatError(
                    f"extension {ext!r} of key {key!r}: use dot-separated parts of [a-z0-9_]"
                )
            name = f"{key}.{ext}"
            header = member_header(name, len(data))
            self._file.write(header)
            self._file.write(data)
            self._file.write(padding(len(data)))
            header_offset = self.position
            locations.append(MemberLocation(name, header_offset, header_offset + BLOCK, len(data)))
            self.position += BLOCK + len(data) + (-len(data) % BLOCK)
        return locations

    def finish(self) -> int:
        """Write the end-of-archive blocks; return the shard's total size."""
        self._file.write(END_OF_ARCHIVE)
        self.position += len(END_OF_ARCHIVE)
        return self.position


def scan_members(path: str | os.PathLike[str]) -> Iterator[MemberLocation]:
    """Every member of a tar, with its offsets, checking that the file is complete: every
    member's data lies inside the file and the end-of-archive blocks follow the last one."""
    size = os.path.getsize(path)
    archive_end = 0
    try:
        with tarfile.open(path, mode="r:") as tar:
            for info in tar:
                end = info.offset_data + info.size
                if end > size:
                    raise TruncatedFileError(
                        f"{path}: member {info.name!r} needs bytes up to {end}, file has {size}"
                    )
                if not info.isreg():
                    raise ShardFormatError(f"{path}: member {info.name!r} is not a regular file")
                archive_end = end + (-info.size % BLOCK)
                yield MemberLocation(info.name, info.offset, info.offset_data, info.size)
    except tarfile.ReadError as e:
        raise ShardFormatError(f"{path}: not a readable tar ({e})") from e
    except EOFError as e:
        raise TruncatedFileError(f"{path}: tar ends in the middle of a member ({e})") from e
    with open(path, "rb") as f:
        f.seek(archive_end)
        tail = f.read(len(END_OF_ARCHIVE))
    if tail != END_OF_ARCHIVE:
        raise TruncatedFileError(
            f"{path}: expected two zero blocks (end of archive) at byte {archive_end}; "
            f"the file has {size} bytes"
        )
