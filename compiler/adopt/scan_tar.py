"""The samples of one webdataset tar, read once from the front: member headers parsed here,
member data read (or passed over) as it streams, every byte through the shard's hasher.

Samples are grouped as webdataset groups them (`compiler.sources.wds`): a member's name splits
at the first dot of its base name into key and extension (`base_plus_ext`), extensions are
lower-cased, consecutive members with one key are a sample, regular files only, and `__name__`
metadata members (and samples keyed so) are skipped. PAX (`x`, `g`) and GNU long-name (`L`,
`K`) headers are read for the member they describe.

A tar that ends early (inside a member or a header, or without its end-of-archive block) or
holds a header that does not parse ends the scan with a `TarCut`: the samples before it are
whole and kept; the sample in progress, if any, is the one the cut falls in. A tar that ends
where a header would start (no end-of-archive block, but every member whole) is read as ended.
"""

from __future__ import annotations

import re
import tarfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO, NamedTuple

from fastpack.formats.tar_shard import BLOCK

_ZERO_BLOCK = bytes(BLOCK)
_SKIP_BYTES = 1 << 20
# webdataset.tariterators.base_plus_ext, and its metadata filters (`skip_meta`, `__key__`s)
_BASE_PLUS_EXT = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")
_SKIP_META = re.compile(r"__[^/]*__($|/)")
_META_KEY = re.compile(r"(^|/)__[^/]*__$")
_PAX_RECORD = re.compile(rb"(\d+) ")
_REGULAR = (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.CONTTYPE)
_POSIX_MAGIC = b"ustar\x0000"
_CHKSUM_SPACES = 8 * 0x20  # the checksum is summed with its own 8 bytes as spaces
_ADLER_PRIME = 65521  # Adler-32's low half is 1 + the byte sum, modulo this prime


def base_plus_ext(name: str) -> tuple[str | None, str | None]:
    """webdataset's split of a member name into key and extension(s)."""
    match = _BASE_PLUS_EXT.match(name)
    return (match.group(1), match.group(2)) if match else (None, None)


@dataclass(frozen=True, slots=True)
class Member:
    """One member of a sample: its full name, where its data starts, its size, and its data
    (None: not read, the scan was not asked for it)."""

    name: str
    offset: int
    size: int
    data: bytes | None


@dataclass(slots=True)
class TarSample:
    """A sample's key, its members by lower-case extension, and the extensions it holds twice."""

    key: str
    members: dict[str, Member] = field(default_factory=dict)
    repeated: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class TarCut:
    """Where the tar stops being readable, and why; `sample` the one in progress (or None)."""

    offset: int
    reason: str
    sample: TarSample | None


class _Stop(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class _Reader:
    """Exact reads from `file`, counting the offset."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file
        self.offset = 0

    def read(self, size: int, what: Callable[[], str]) -> bytes:
        """`size` bytes; `what()` names them in the error when the file ends first (made only
        then: a message per member costs as much as the member's header)."""
        data = self.file.read(size)
        self.offset += len(data)
        if len(data) < size:
            raise _Stop(f"cut off at byte {self.offset}, inside {what()}")
        return data

    def skip(self, size: int, what: Callable[[], str]) -> None:
        while size > 0:
            got = len(self.file.read(min(size, _SKIP_BYTES)))
            if got == 0:
                raise _Stop(f"cut off at byte {self.offset}, inside {what()}")
            self.offset += got
            size -= got


class _Info(NamedTuple):
    """What a member header says that the scan uses (as `tarfile.TarInfo` names it)."""

    name: str
    size: int
    type: bytes


def _ustar(block: bytes) -> _Info | None:
    """A POSIX USTAR header whose fields are plain (octal size, a valid checksum), read without
    `tarfile` (slower: it decodes every field into a `TarInfo`); None for any other, which
    `tarfile` reads."""
    if block[257:265] != _POSIX_MAGIC or block[124] & 0x80:
        return None
    field = block[148:156]
    try:
        checksum = int(field.strip(b" \0") or b"0", 8)
        size = int(block[124:136].strip(b" \0") or b"0", 8)
    except ValueError:
        return None
    # the header's byte sum is Adler-32's low half less 1, modulo its prime, and C's speed
    # (Python's `sum` adds the 512 bytes one Python int at a time): two sums of at most
    # 512 x 255 agree unless they differ by a multiple of the prime, and a damaged header must
    # then also keep its magic and octal fields to pass
    summed = (zlib.adler32(block) & 0xFFFF) - 1
    if (checksum - _CHKSUM_SPACES + sum(field) - summed) % _ADLER_PRIME:
        return None
    name = block[:100].split(b"\0", 1)[0]
    prefix = block[345:500].split(b"\0", 1)[0]
    if prefix:
        name = prefix + b"/" + name
    kind = block[156:157]
    if kind == tarfile.AREGTYPE and name.endswith(b"/"):
        kind = tarfile.DIRTYPE  # as tarfile reads it
    return _Info(name.decode("utf-8", "surrogateescape"), size, kind)


def _parsed(block: bytes, at: int) -> _Info:
    """Any header `tarfile` reads (GNU, base-256 sizes, ...)."""
    try:
        info = tarfile.TarInfo.frombuf(block, "utf-8", "surrogateescape")
    except tarfile.HeaderError as e:
        raise _Stop(f"byte {at} is not a valid tar member header ({e})") from e
    return _Info(info.name, info.size, info.type)


def _pax_fields(data: bytes) -> dict[str, str]:
    """The `key=value` records of a PAX header's data."""
    found: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        match = _PAX_RECORD.match(data, pos)
        if match is None:
            break
        length = int(match.group(1))
        record = data[match.end() : pos + length - 1]
        key, _, value = record.partition(b"=")
        found[key.decode("utf-8", "surrogateescape")] = value.decode("utf-8", "surrogateescape")
        pos += length
    return found


@dataclass
class _Pending:
    """What extended headers say about the next member."""

    name: str | None = None
    size: int | None = None


def _header(reader: _Reader, pending: _Pending) -> tuple[str, int, bool] | None:
    """The next member's `(name, size, regular)`, extended headers applied; None at the end
    of the archive. Leaves the reader at the member's data."""
    while True:
        at = reader.offset
        block = reader.file.read(BLOCK)
        if not block:  # none at all: the file ends where a header would start
            return None
        reader.offset += len(block)
        if len(block) < BLOCK:
            raise _Stop(f"cut off at byte {reader.offset}, inside the member header at byte {at}")
        if block == _ZERO_BLOCK:
            return None
        info = _ustar(block) or _parsed(block, at)
        padded = info.size + (-info.size % BLOCK)

        def what(name: str = info.name, at: int = at) -> str:
            return f"member {name!r} (header at byte {at})"

        if info.type in (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK):
            data = reader.read(padded, what)[: info.size]
            if info.type == tarfile.GNUTYPE_LONGNAME:
                pending.name = data.rstrip(b"\0").decode("utf-8", "surrogateescape")
            continue
        if info.type in (tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE):
            fields = _pax_fields(reader.read(padded, what)[: info.size])
            if info.type != tarfile.XGLTYPE:
                pending.name = fields.get("path", pending.name)
                pax_size = fields.get("size")
                if pax_size is not None and pax_size.isdigit():
                    pending.size = int(pax_size)
            continue
        name = pending.name if pending.name is not None else info.name
        size = pending.size if pending.size is not None else info.size
        pending.name, pending.size = None, None
        return name, size, info.type in _REGULAR


def _is_sample_member(name: str, regular: bool) -> bool:
    """webdataset's `tar_file_iterator` filter: regular files but `__name__` metadata."""
    if not regular or ("/" not in name and name.startswith("__") and name.endswith("__")):
        return False
    return _SKIP_META.match(name) is None


def tar_samples(file: BinaryIO, wanted: Callable[[str], bool]) -> Iterator[TarSample | TarCut]:
    """The samples of the tar in `file`, read front to back; the data of a member is read when
    `wanted(extension)`, passed over otherwise (read, not sought: on a network file system a
    seek costs a round trip). Ends with a `TarCut` where the tar is damaged or cut off;
    otherwise after the end-of-archive block (what follows it is not read)."""
    reader, pending = _Reader(file), _Pending()
    sample: TarSample | None = None
    try:
        while (found := _header(reader, pending)) is not None:
            name, size, regular = found
            offset = reader.offset

            def what(name: str = name, offset: int = offset, size: int = size) -> str:
                return f"member {name!r} (data at byte {offset}, {size} bytes)"

            key, ext = base_plus_ext(name) if _is_sample_member(name, regular) else (None, None)
            if key is None or ext is None:
                reader.skip(size + (-size % BLOCK), what)
                continue
            ext = ext.lower()
            if sample is None or key != sample.key:
                if sample is not None and not _META_KEY.search(sample.key):
                    yield sample
                sample = TarSample(key)
            data = reader.read(size, what) if wanted(ext) else None
            reader.skip((size if data is None else 0) + (-size % BLOCK), what)
            if ext in sample.members:
                sample.repeated.append(ext)
            else:
                sample.members[ext] = Member(name, offset, size, data)
    except _Stop as stop:
        yield TarCut(reader.offset, stop.reason, sample)
        return
    if sample is not None and not _META_KEY.search(sample.key):
        yield sample
