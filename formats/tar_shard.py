"""USTAR tar shards (formats/SPEC.md section 4): writing them and scanning their members."""

from __future__ import annotations

import os
import re
import tarfile
from collections.abc import Iterator, Sequence
from typing import BinaryIO, NamedTuple

from .errors import ShardFormatError, TruncatedFileError

BLOCK = 512
END_OF_ARCHIVE = bytes(2 * BLOCK)
MAX_NAME_BYTES = 99
_KEY = re.compile(r"[^.\s/]+")
_EXT = re.compile(r"[a-z0-9_]+(\.[a-z0-9_]+)*")


class MemberLocation(NamedTuple):
    """Where one member sits inside a shard. A NamedTuple, not a dataclass: a shard job makes
    one per member (five a sample with a caption, class ids and JSON), and a tuple is made
    faster than a dataclass instance."""

    name: str
    header_offset: int
    data_offset: int
    size: int

    @property
    def key(self) -> str:
        return self.name.partition(".")[0]

    @property
    def ext(self) -> str:
        return self.name.partition(".")[2]


def check_key(key: str) -> None:
    if not _KEY.fullmatch(key):
        raise ShardFormatError(f"key {key!r}: keys must be non-empty, without '.', '/' or spaces")


def _tarfile_header(name: str, size: int) -> bytes:
    """The header as `tarfile` writes it: the reference `member_header` reproduces."""
    info = tarfile.TarInfo(name)
    info.size = size
    info.mtime = 0
    info.mode = 0o644
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.type = tarfile.REGTYPE
    return info.tobuf(format=tarfile.USTAR_FORMAT, encoding="utf-8", errors="strict")


def _blank_header() -> bytearray:
    """A header with an empty name, size 0 and the checksum field as spaces (as summed)."""
    header = bytearray(_tarfile_header("x", 0))
    header[_NAME] = bytes(_NAME.stop)
    header[_CHKSUM_FIELD] = b" " * 8
    return header


_NAME, _SIZE = slice(0, 100), slice(124, 136)
_CHKSUM_FIELD, _CHKSUM = slice(148, 156), slice(148, 155)  # 6 octal digits and a NUL, then " "
_MAX_SIZE = 8**11  # USTAR's 11 octal digits
_BLANK = _blank_header()
_BLANK_SUM = sum(_BLANK)
_ZERO_SIZE_SUM = sum(_BLANK[_SIZE])


def member_header(name: str, size: int) -> bytes:
    """The 512-byte USTAR header of a regular member: mode 0644, uid/gid 0, mtime 0; the bytes
    `tarfile` writes, filled into a template (`tarfile` takes about 4x as long: 14 us against
    3.4, benchmarks/fields/FIELDS.md)."""
    encoded = name.encode("utf-8")
    if len(encoded) > MAX_NAME_BYTES:
        raise ShardFormatError(f"member name {name!r} is over {MAX_NAME_BYTES} bytes")
    if not 0 <= size < _MAX_SIZE:
        raise ShardFormatError(
            f"member {name!r} of {size} bytes: a USTAR member holds 0 to {_MAX_SIZE - 1} bytes"
        )
    if b"\0" in encoded:
        return _tarfile_header(name, size)  # tarfile's own error
    header = bytearray(_BLANK)
    header[: len(encoded)] = encoded
    size_field = b"%011o\0" % size
    header[_SIZE] = size_field
    # the checksum sums every byte: the blank's, plus the name's, plus the size digits' excess
    # over the blank's zeros
    checksum = _BLANK_SUM + sum(encoded) + sum(size_field) - _ZERO_SIZE_SUM
    header[_CHKSUM] = b"%06o\0" % checksum
    return bytes(header)


_PADDING = tuple(bytes(n) for n in range(BLOCK))
# the template's bytes around the name and size fields, for a header made by one join
_MODE_IDS = bytes(_BLANK[_NAME.stop : _SIZE.start])
_MTIME = bytes(_BLANK[_SIZE.stop : _CHKSUM_FIELD.start])
_TAIL = b" " + bytes(_BLANK[_CHKSUM_FIELD.stop :])  # the checksum field's last byte is a space
# a member of at most this many bytes is joined with its neighbours into one write; a bigger
# one (an image) is written as it is, not copied into the join first
_JOIN_LIMIT = 4096


class _Extension(NamedTuple):
    """A checked member extension, as its header needs it: `.ext` and the sum of its bytes."""

    suffix: bytes
    suffix_sum: int


class TarShardWriter:
    """Appends samples to a binary file as contiguous USTAR members.

    A sample's members go out in few writes (headers, padding and small members joined), their
    headers filled into the template's pieces with one join: a sample with a caption, class ids
    and JSON is five members, and per-member calls were most of its writing time."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self.position = 0
        self._extensions: dict[str, _Extension] = {}  # checked already

    def _extension(self, key: str, ext: str) -> _Extension:
        if not _EXT.fullmatch(ext):
            raise ShardFormatError(
                f"extension {ext!r} of key {key!r}: use dot-separated parts of [a-z0-9_]"
            )
        suffix = b"." + ext.encode("ascii")
        found = self._extensions[ext] = _Extension(suffix, sum(suffix))
        return found

    def add_sample(self, key: str, members: Sequence[tuple[str, bytes]]) -> list[MemberLocation]:
        """Write `<key>.<ext>` for each `(ext, data)`, in order; return where each landed."""
        check_key(key)
        encoded_key = key.encode("utf-8")
        if b"\0" in encoded_key:
            member_header(key, 0)  # tarfile's own error
        key_sum = sum(encoded_key)
        locations = []
        parts: list[bytes] = []
        position = self.position
        for ext, data in members:
            extension = self._extensions.get(ext) or self._extension(key, ext)
            name = encoded_key + extension.suffix
            size = len(data)
            if len(name) > MAX_NAME_BYTES or size >= _MAX_SIZE:
                member_header(f"{key}.{ext}", size)  # raises its error
            size_field = b"%011o\0" % size
            # the template's sum plus the name's and the size digits' over the template's zeros
            checksum = _BLANK_SUM + key_sum + extension.suffix_sum + sum(size_field)
            checksum -= _ZERO_SIZE_SUM
            parts += (
                name.ljust(_NAME.stop, b"\0"),
                _MODE_IDS,
                size_field,
                _MTIME,
                b"%06o\0" % checksum,
                _TAIL,
            )
            if size > _JOIN_LIMIT:
                self._file.write(b"".join(parts))
                self._file.write(data)
                parts = []
            else:
                parts.append(data)
            pad = _PADDING[-size % BLOCK]
            if pad:
                parts.append(pad)
            locations.append(MemberLocation(name.decode("utf-8"), position, position + BLOCK, size))
            position += BLOCK + size + len(pad)
        if parts:
            self._file.write(b"".join(parts))
        self.position = position
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
