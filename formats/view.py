"""`views/<name>.fpview`: a named subset of a dataset's samples (formats/SPEC.md section 8)."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import zstandard

from .checksum import crc32c_extend
from .errors import (
    BadMagicError,
    ChecksumMismatchError,
    DatasetNotFoundError,
    TruncatedFileError,
    UnsupportedVersionError,
    ViewError,
    ViewMismatchError,
)
from .manifest import Manifest, manifest_digest

VIEW_MAGIC = b"\x89FPV\r\n\x1a\n"
VIEW_VERSION = 2
SUPPORTED_VIEW_VERSIONS = (1, 2)
VIEWS_DIR = "views"
VIEW_SUFFIX = ".fpview"
BALANCES = ("class",)
_PREAMBLE = struct.Struct("<8sII")  # magic, version, header_size
_TRAILER = struct.Struct("<I")  # CRC-32C of every byte before it
_TRAILER_VERSION = 2  # the first version with the trailer
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_ZSTD_LEVEL = 3
# Header key -> the JSON types it may hold (`int` excludes bool, checked apart).
_KEYS: dict[str, tuple[type, ...]] = {
    "name": (str,),
    "dataset": (str,),
    "num_samples": (int,),
    "count": (int,),
    "definition": (dict,),
    "balance": (str, type(None)),
    "rows_crc32c": (int,),
}

Rows = npt.NDArray[np.int64]


def is_view_name(text: str) -> bool:
    """Whether `text` is a valid view name: 1 to 128 of `[A-Za-z0-9._-]`, not starting with `.`."""
    return _NAME.fullmatch(text) is not None


def view_file_name(name: str) -> str:
    """`views/<name>.fpview`: where the view `name` lies inside its dataset."""
    return f"{VIEWS_DIR}/{name}{VIEW_SUFFIX}"


@dataclass(frozen=True, kw_only=True)
class View:
    """A named subset of the samples of the dataset whose manifest digest is `dataset`.

    `rows` are the dataset's sample indices in the view: int64, ascending, unique, each below
    `num_samples`; read-only. `definition` records the options that selected them."""

    name: str
    dataset: str
    num_samples: int
    rows: Rows
    definition: dict[str, Any] = field(default_factory=dict)
    balance: str | None = None

    def __post_init__(self) -> None:
        where = f"view {self.name!r}"
        if not is_view_name(self.name):
            raise ViewError(
                f"{where}: a view name is 1 to 128 characters of [A-Za-z0-9._-], not starting "
                "with '.'"
            )
        if _DIGEST.fullmatch(self.dataset) is None:
            raise ViewError(f"{where}: dataset {self.dataset!r} is not a hex SHA-256")
        if self.balance is not None and self.balance not in BALANCES:
            raise ViewError(f"{where}: balance {self.balance!r}, expected None or 'class'")
        object.__setattr__(self, "rows", _checked_rows(self.rows, self.num_samples, where))

    @property
    def count(self) -> int:
        """Samples in the view."""
        return len(self.rows)

    def mask(self) -> npt.NDArray[np.bool_]:
        """One bool per sample of the dataset: True for the samples in the view."""
        mask = np.zeros(self.num_samples, dtype=np.bool_)
        mask[self.rows] = True
        return mask

    def bitmap(self) -> bytes:
        """The view's rows as SPEC section 8 stores them, before compression."""
        return np.packbits(self.mask(), bitorder="little").tobytes()

    def digest(self) -> str:
        """A short, stable identity: the name, then 16 hex digits of the SHA-256 of the
        dataset digest, the balance and the bitmap (computed once)."""
        return self._digest

    @functools.cached_property
    def _digest(self) -> str:
        h = hashlib.sha256(f"{self.dataset}\0{self.balance or ''}\0".encode())
        h.update(self.bitmap())
        return f"{self.name}@{h.hexdigest()[:16]}"


def _checked_rows(rows: Any, num_samples: int, where: str) -> Rows:
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 0:
        raise ViewError(f"{where}: num_samples {num_samples!r}, expected an int >= 0")
    array = np.asarray(rows)
    if array.ndim != 1 or not (array.size == 0 or np.issubdtype(array.dtype, np.integer)):
        raise ViewError(f"{where}: rows should be a 1-D array of ints, found {array.dtype}")
    checked = np.array(array, dtype=np.int64)  # a copy: the view owns its rows
    if checked.size:
        if checked[0] < 0 or checked[-1] >= num_samples:
            raise ViewError(
                f"{where}: rows run from {checked[0]} to {checked[-1]}, outside the dataset's "
                f"samples [0, {num_samples})"
            )
        steps = np.diff(checked)
        if steps.size and steps.min() <= 0:
            at = int(np.argmax(steps <= 0))
            raise ViewError(
                f"{where}: rows should be ascending and unique; row {at + 1} is "
                f"{checked[at + 1]} after {checked[at]}"
            )
    checked.flags.writeable = False
    return checked


def check_view_dataset(view: View, manifest: Manifest, where: str) -> View:
    """`view` if it was made for the dataset of `manifest`, else `ViewMismatchError`; `where`
    names the view's file (or the view) in the message."""
    digest = manifest_digest(manifest)
    if view.dataset != digest or view.num_samples != manifest.num_samples:
        raise ViewMismatchError(
            f"{where}: view {view.name!r} was made for another dataset (manifest digest "
            f"{view.dataset[:16]}..., {view.num_samples} samples); this dataset's is "
            f"{digest[:16]}..., {manifest.num_samples} samples"
        )
    return view


def view_to_bytes(view: View) -> bytes:
    """The file of `view` (SPEC section 8)."""
    bitmap = view.bitmap()
    header = {
        "name": view.name,
        "dataset": view.dataset,
        "num_samples": view.num_samples,
        "count": view.count,
        "definition": dict(view.definition),
        "balance": view.balance,
        "rows_crc32c": crc32c_extend(0, bitmap),
    }
    text = _header_text(header)
    frame = zstandard.ZstdCompressor(level=_ZSTD_LEVEL, write_content_size=True).compress(bitmap)
    body = _PREAMBLE.pack(VIEW_MAGIC, VIEW_VERSION, len(text)) + text + frame
    return body + _TRAILER.pack(crc32c_extend(0, body))


def _header_text(header: dict[str, Any]) -> bytes:
    """The canonical text of a header (SPEC section 8): keys sorted, no whitespace."""
    return json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def check_view_text(data: bytes, where: str) -> View:
    """The view in the file bytes `data`, checked as `view_from_bytes` checks it and its header
    checked to be the canonical text of what it holds, as writers write it (which covers a
    version-1 header's bytes: version 1 has no checksum of the file). `ViewError` naming
    `where` for a header written otherwise."""
    view = view_from_bytes(data, where)
    size = _PREAMBLE.unpack_from(data)[2]
    found = bytes(data[_PREAMBLE.size : _PREAMBLE.size + size])
    if found != _header_text(json.loads(found)):
        raise ViewError(
            f"{where}: the header is not the canonical text of what it holds (keys sorted, no "
            f"whitespace): {found[:200]!r}"
        )
    return view


def view_from_bytes(data: bytes, where: str) -> View:
    """Parse and check a view file's bytes; `where` names the file in errors."""
    header, frame = _split(data, where)
    num_samples, count = header["num_samples"], header["count"]
    bitmap = _bitmap(frame, (num_samples + 7) // 8, where)
    crc = crc32c_extend(0, bitmap)
    if crc != header["rows_crc32c"]:
        raise ChecksumMismatchError(
            f"{where}: the bitmap's CRC-32C is {crc}, the header records "
            f"{header['rows_crc32c']}: the file is damaged"
        )
    bits = np.unpackbits(np.frombuffer(bitmap, np.uint8), bitorder="little")
    if bits[num_samples:].any():
        raise ViewError(f"{where}: the bitmap has bits set past row {num_samples - 1}")
    rows = np.flatnonzero(bits[:num_samples])
    if len(rows) != count:
        raise ViewError(f"{where}: the header counts {count} rows, the bitmap holds {len(rows)}")
    try:
        return View(
            name=header["name"],
            dataset=header["dataset"],
            num_samples=num_samples,
            rows=rows,
            definition=header["definition"],
            balance=header["balance"],
        )
    except ViewError as e:
        raise ViewError(f"{where}: {e}") from e


def _split(data: bytes, where: str) -> tuple[dict[str, Any], bytes]:
    """The checked JSON header and the bytes after it."""
    if len(data) < _PREAMBLE.size:
        if not VIEW_MAGIC.startswith(bytes(data[: len(VIEW_MAGIC)])):
            raise BadMagicError(f"{where}: bad magic {bytes(data[:8])!r}, expected {VIEW_MAGIC!r}")
        raise TruncatedFileError(
            f"{where}: {len(data)} bytes, shorter than the {_PREAMBLE.size}-byte preamble"
        )
    magic, version, size = _PREAMBLE.unpack_from(data)
    if magic != VIEW_MAGIC:
        raise BadMagicError(f"{where}: bad magic {magic!r}, expected {VIEW_MAGIC!r} (a view file)")
    if version not in SUPPORTED_VIEW_VERSIONS:
        raise UnsupportedVersionError(
            f"{where}: view version {version}, this reader supports {SUPPORTED_VIEW_VERSIONS}"
        )
    end = _PREAMBLE.size + size
    if end > len(data):
        raise TruncatedFileError(
            f"{where}: {len(data)} bytes, the {size}-byte header alone ends at byte {end}"
        )
    if version >= _TRAILER_VERSION:
        data = _without_trailer(data, end, where)
    try:
        header = json.loads(bytes(data[_PREAMBLE.size : end]).decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ViewError(f"{where}: the header is not UTF-8 JSON ({e})") from e
    return _check_header(header, where), bytes(data[end:])


def _without_trailer(data: bytes, end: int, where: str) -> bytes:
    """A version-2 file's bytes before its `file_crc32c`, checked against it; `end`: where the
    header ends."""
    if len(data) < end + _TRAILER.size:
        raise TruncatedFileError(
            f"{where}: {len(data)} bytes, too short for its header (to byte {end}) and the "
            f"{_TRAILER.size}-byte checksum"
        )
    body = data[: len(data) - _TRAILER.size]
    (recorded,) = _TRAILER.unpack_from(data, len(body))
    crc = crc32c_extend(0, body)
    if crc != recorded:
        raise ChecksumMismatchError(
            f"{where}: the file's CRC-32C is {crc:08x}, its last 4 bytes record {recorded:08x}: "
            "the file is damaged or cut short"
        )
    return body


def _check_header(header: Any, where: str) -> dict[str, Any]:
    if not isinstance(header, dict):
        raise ViewError(f"{where}: the header is a JSON {type(header).__name__}, not an object")
    missing = sorted(set(_KEYS) - set(header))
    unknown = sorted(set(header) - set(_KEYS))
    if missing or unknown:
        raise ViewError(
            f"{where}: header keys missing: {', '.join(missing) or '-'}; unknown: "
            f"{', '.join(unknown) or '-'}"
        )
    for key, kinds in _KEYS.items():
        value = header[key]
        if isinstance(value, bool) or not isinstance(value, kinds):
            expected = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
            raise ViewError(f"{where}: header key {key!r} is {value!r:.60}, expected {expected}")
    for key in ("num_samples", "count"):
        if header[key] < 0:
            raise ViewError(f"{where}: header key {key!r} is {header[key]}, expected >= 0")
    if not 0 <= header["rows_crc32c"] < 2**32:
        raise ViewError(f"{where}: rows_crc32c {header['rows_crc32c']} is not a u32")
    return header


def _bitmap(frame: bytes, size: int, where: str) -> bytes:
    """The decompressed bitmap, checked to be one zstd frame of `size` bytes."""
    if not frame:
        raise TruncatedFileError(f"{where}: the file ends after its header, without the bitmap")
    try:
        declared = zstandard.frame_content_size(frame)
        if declared != size:
            found = "no size" if declared < 0 else f"{declared} bytes"
            raise ViewError(
                f"{where}: the bitmap's zstd frame declares {found}, expected {size} bytes "
                f"(one bit per sample)"
            )
        reader = zstandard.ZstdDecompressor().decompressobj()
        bitmap = reader.decompress(frame)
    except zstandard.ZstdError as e:
        raise ViewError(f"{where}: the bitmap is not a zstd frame ({e})") from e
    if not reader.eof or len(bitmap) != size:
        raise TruncatedFileError(
            f"{where}: the bitmap's zstd frame is cut short ({len(bitmap)} of {size} bytes)"
        )
    if reader.unused_data:
        raise ViewError(f"{where}: {len(reader.unused_data)} bytes after the bitmap's zstd frame")
    return bitmap


def read_view_file(path: str | os.PathLike[str]) -> View:
    """The view in the file `path`; `DatasetNotFoundError` if there is none."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError as e:
        raise DatasetNotFoundError(f"{path}: view file not found") from e
    return view_from_bytes(data, str(path))


def write_view_file(path: str | os.PathLike[str], view: View) -> None:
    """Write `view` to `path` atomically (a temporary file in the same folder, fsync, rename):
    `path` holds the old file or the new one, never part of one. Creates the folder."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as f:
            f.write(view_to_bytes(view))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
