"""The checks of a shard's members, shared by `verify_dataset` and `verify_remote`: where each
present member lies, the markers of absent ones, each member's CRC-32, a label member against the
index's label, zstd frames against their field's dictionary, and with `decode` each value.

Each check returns its problem as a line naming the shard, the sample (index row and key) and the
field, or None.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
from fastpack.formats import (
    ABSENT,
    FastpackError,
    FieldSpec,
    FieldValueError,
    Index,
    Manifest,
    Schema,
    field_type,
)
from fastpack.formats.field_codec import FieldCodec

from ..fields import image_reader

Rows = npt.NDArray[np.intp]


class Payload(NamedTuple):
    """One present member of one sample (index row `row`), where the index puts it in its shard."""

    row: int
    field: str
    offset: int
    size: int

    @property
    def end(self) -> int:
        return self.offset + self.size


def _absent(index: Index, field: str, rows: Rows) -> npt.NDArray[np.bool_]:
    """Which of `rows` have the absent marker in `field` (never, in a version-1 index)."""
    if index.version == 1:
        return np.zeros(len(rows), bool)
    absent: npt.NDArray[np.bool_] = index.offsets(field)[rows] == np.uint64(ABSENT)
    return absent


def shard_payloads(index: Index, fields: Sequence[str], rows: Rows) -> list[Payload]:
    """The present members of samples `rows`, sample by sample, each in the order of `fields`."""
    columns = [
        (
            f,
            index.offsets(f)[rows].tolist(),
            index.sizes(f)[rows].tolist(),
            _absent(index, f, rows).tolist(),
        )
        for f in fields
    ]
    return [
        Payload(row, f, int(offsets[k]), int(sizes[k]))
        for k, row in enumerate(rows.tolist())
        for f, offsets, sizes, absent in columns
        if not absent[k]
    ]


def present(index: Index, field: str, row: int) -> bool:
    """Whether sample `row` holds a member of `field`."""
    return index.version == 1 or int(index.offsets(field)[row]) != ABSENT


def key_of(index: Index, row: int) -> str:
    """Sample `row`'s key, or `?` where the index cannot give it (its own problem, reported by
    the checks of the index)."""
    try:
        return index.key(row)
    except FastpackError:
        return "?"


def where(shard: str, index: Index, row: int, field: str) -> str:
    return f"{shard}: sample {row} (key {key_of(index, row)}) field {field!r}"


def outside_problems(  # noqa: PLR0913 -- keyword inputs
    shard: str, index: Index, fields: Sequence[str], row: int, *, span: tuple[int, int], holder: str
) -> list[str]:
    """The members of sample `row` (of `fields`) whose bytes do not lie in `span` (`[start,
    stop)`, the data of the record `holder` names) of the shard `shard`."""
    start, stop = span
    problems = []
    for f in fields:
        if not present(index, f, row):
            continue
        begin = int(index.offsets(f)[row])
        end = begin + int(index.sizes(f)[row])
        if not start <= begin <= end <= stop:
            problems.append(
                f"{where(shard, index, row, f)}: bytes [{begin}, {end}) lie outside the data "
                f"[{start}, {stop}) of {holder}"
            )
    return problems


def absent_problems(shard: str, index: Index, schema: Schema, rows: Rows) -> list[str]:
    """The absent markers of samples `rows` that break the rules: one in a field that is not
    optional, or one whose size and crc32 are not 0."""
    problems = []
    for spec in schema.fields:
        absent = _absent(index, spec.name, rows)
        sizes, crcs = index.sizes(spec.name)[rows], index.crc32(spec.name)[rows]
        for k in np.flatnonzero(absent).tolist():
            row = int(rows[k])
            if not spec.optional:
                problems.append(
                    f"{where(shard, index, row, spec.name)}: marked absent, but the field is not "
                    "optional"
                )
            elif sizes[k] or crcs[k]:
                problems.append(
                    f"{where(shard, index, row, spec.name)}: marked absent with size {sizes[k]} "
                    f"and crc32 {int(crcs[k]):08x}, expected 0 and 0"
                )
    return problems


def bounds_problem(shard: str, index: Index, p: Payload, shard_bytes: int) -> str | None:
    """The problem if payload `p` reaches past the end of `shard` (`shard_bytes` long)."""
    if p.end <= shard_bytes:
        return None
    return (
        f"{where(shard, index, p.row, p.field)}: bytes [{p.offset}, {p.end}) past the shard's "
        f"end ({shard_bytes} bytes)"
    )


def dictionary_problems(
    schema: Schema, read: Callable[[str], bytes], name_of: Callable[[str], str]
) -> tuple[dict[str, bytes], list[str]]:
    """The zstd dictionaries of `schema`'s fields, each read with `read(name)` (which raises
    FileNotFoundError for a missing file) and checked against its size and SHA-256 in the
    schema: `(good dictionaries by field, problems)`. `name_of(name)` names a file in problems."""
    good: dict[str, bytes] = {}
    problems = []
    for spec in schema.fields:
        d = spec.zstd.dictionary if spec.zstd is not None else None
        if d is None:
            continue
        what = f"{name_of(d.name)}: zstd dictionary of field {spec.name!r}"
        try:
            data = read(d.name)
        except FileNotFoundError:
            problems.append(f"{what} not found")
            continue
        except (FastpackError, OSError) as e:
            problems.append(f"{what} unreadable ({type(e).__name__}: {e})")
            continue
        if len(data) != d.bytes:
            problems.append(f"{what}: {len(data)} bytes, the schema records {d.bytes}")
        elif (digest := hashlib.sha256(data).hexdigest()) != d.sha256:
            problems.append(f"{what}: sha256 {digest}, the schema records {d.sha256}")
        else:
            good[spec.name] = data
    return good, problems


def member_checks(  # noqa: PLR0913 -- keyword inputs
    manifest: Manifest,
    read: Callable[[str], bytes],
    name_of: Callable[[str], str],
    decode: bool,
    *,
    records: bool,
    adopted: bool = False,
) -> tuple[MemberChecks, list[str]]:
    """The member checks of a dataset (its schema, its dictionaries as `read` gives them by
    name) and the problems of its dictionaries. Images are decoded under the default pixel
    budget, as a reader decodes them, whatever budget the build took: a dataset built with a
    larger one reports its larger images as over the budget instead of decoding them."""
    dictionaries, problems = dictionary_problems(manifest.schema, read, name_of)
    checks = MemberChecks(manifest.schema, dictionaries, decode, records=records, adopted=adopted)
    return checks, problems


class MemberChecks:
    """The checks of one member's bytes under `schema`: its CRC-32 against the index, a label
    member against the index's label, a zstd frame decompressed, and with `decode` its value
    decoded as its type says (a JPEG strictly, a PNG by OpenCV, the rest by its codec and checked
    against the field's dtype and shape), a mask's size against its sample's image.

    `dictionaries` holds the checked dictionaries (`dictionary_problems`); a field whose
    dictionary is missing or damaged gets the CRC and label checks only. `records`: the shards
    are TFRecord files, whose label members are varints. `adopted`: the shards were written by
    another tool, whose label members hold the label's text as it was given (a class name, say),
    not the index's label: they are not checked against it nor decoded. Images are decoded under
    the default pixel budget. Holds zstd contexts: one per thread."""

    def __init__(
        self,
        schema: Schema,
        dictionaries: Mapping[str, bytes],
        decode: bool,
        *,
        records: bool = False,
        adopted: bool = False,
    ) -> None:
        self.schema = schema
        self.adopted = adopted
        self.decode = decode
        label = schema.label_field
        self._codecs = {
            s.name: FieldCodec(s, dictionaries.get(s.name), varint=records and s.name == label)
            for s in schema.fields
            if s.zstd is None or s.zstd.dictionary is None or s.name in dictionaries
        }
        self._image: tuple[int, tuple[int, int]] | None = None  # (row, (height, width))

    def problem(self, shard: str, index: Index, p: Payload, data: bytes | memoryview) -> str | None:
        """The problem with payload `p` of `shard`, read as `data`, if any."""
        found = self._problem(index, p, data)
        return None if found is None else f"{where(shard, index, p.row, p.field)}: {found}"

    def _problem(self, index: Index, p: Payload, data: bytes | memoryview) -> str | None:
        crc, expected = zlib.crc32(data), int(index.crc32(p.field)[p.row])
        if crc != expected:
            return f"crc32 {crc:08x}, the index records {expected:08x}"
        codec = self._codecs.get(p.field)
        if p.field == self.schema.label_field and self.adopted:
            return None
        if p.field == self.schema.label_field and codec is not None:
            label = int(index.label[p.row])
            if bytes(data) != codec.encode(label):  # ASCII decimals, or a record's varint
                return f"holds {bytes(data)!r}, label is {label}"
        if codec is None or not (self.decode or codec.spec.zstd is not None):
            return None
        try:
            self._check_value(codec, p, data)
        except ValueError as e:  # FieldValueError, simplejpeg's errors
            return f"does not decode ({e})"
        return None

    def _check_value(self, codec: FieldCodec, p: Payload, data: bytes | memoryview) -> None:
        """Raise FieldValueError (or simplejpeg's ValueError) for a member whose value is not
        what its field says; without `decode`, only decompress it."""
        plain = codec.decompress(data)
        if not self.decode:
            return
        spec = codec.spec
        kind = field_type(spec.type)
        if kind.image:  # decoded to pixels by the reader's decoder of the type
            self._check_image(spec, image_reader(spec.type).check(plain), p.row)
        else:  # decoded, then the type's checks: the schema's shape, dtype, integer class ids
            kind.check_value(codec.decode_plain(plain), spec)

    def _check_image(self, spec: FieldSpec, size: tuple[int, int], row: int) -> None:
        """Keep the size of the sample's image; a mask must have it."""
        if spec.name == self.schema.image_field:
            self._image = (row, size)
            return
        image = self._image
        if spec.geometry == "mask" and image is not None and image[0] == row and size != image[1]:
            raise FieldValueError(
                f"a mask of {size[0]}x{size[1]} pixels, its image is {image[1][0]}x{image[1][1]}"
            )
