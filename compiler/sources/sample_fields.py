"""A sample's fields beyond its image and label, as a source scan hands them to the shard jobs.

Each `PlanRow` carries them as one JSON object (`pack_fields`), stored in the plan's
`fields.blob`; a shard job unpacks it (`unpack_fields`) and encodes each value by the schema. A
value is inline (a number, text, list or object, as the source gave it) or a reference to bytes
the job reads itself: a file (`FileRef`, a path relative to the scan's root) or a byte range of
one of the scan's containers (`MemberRef`: a source tar's member, or bytes a scan spilled).
A field missing from the object is absent from the sample (an optional field) or, for a field
the schema requires, a reject. A scan that finds a value it cannot use (a polygon with an odd
number of coordinates) passes `InvalidValue(reason)`: the sample is rejected with that reason.
An `InvalidValue` under `WHOLE_SAMPLE` rejects the sample as a whole, image and all (an input
the scan could not read at all: a TFRecord record whose checksum fails); such a row's image is
empty, so that it is rejected even where the key is not looked at.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# the key of a row's fields whose `InvalidValue` rejects the whole sample
WHOLE_SAMPLE = ""


@dataclass(frozen=True, slots=True)
class FileRef:
    """A field's bytes are the file `path` (relative to the scan's root)."""

    path: str


@dataclass(frozen=True, slots=True)
class MemberRef:
    """A field's bytes are `size` bytes at `offset` of container `container`."""

    container: int
    offset: int
    size: int


@dataclass(frozen=True, slots=True)
class InvalidValue:
    """A field's value could not be read from the source, for `reason`."""

    reason: str


# made once: json.dumps with options other than the defaults makes a new encoder each call
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
_ASCII_JSON = json.JSONEncoder(separators=(",", ":"))

FieldValue = Any  # an inline JSON value, a FileRef, a MemberRef or an InvalidValue


def pack_fields(values: Mapping[str, FieldValue]) -> bytes:
    """The JSON text of a sample's fields: `{"v": inline, "f": files, "m": members, "e":
    reasons}`. Text with lone surrogates (from a file name, say) is escaped, not an error."""
    if not values:
        return b""
    inline: dict[str, Any] = {}
    files: dict[str, str] = {}
    members: dict[str, list[int]] = {}
    invalid: dict[str, str] = {}
    for name, value in values.items():
        if isinstance(value, InvalidValue):
            invalid[name] = value.reason
        elif isinstance(value, FileRef):
            files[name] = value.path
        elif isinstance(value, MemberRef):
            members[name] = [value.container, value.offset, value.size]
        else:
            inline[name] = value
    data: dict[str, Any] = {"v": inline}
    if files:
        data["f"] = files
    if members:
        data["m"] = members
    if invalid:
        data["e"] = invalid
    text = _JSON.encode(data)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: JSON's escapes keep it, for the codec to judge
        return _ASCII_JSON.encode(data).encode("ascii")


def unpack_fields(data: bytes) -> dict[str, FieldValue]:
    """What `pack_fields` packed."""
    if not data:
        return {}
    packed = json.loads(data)
    values: dict[str, FieldValue] = dict(packed["v"])
    for name, path in packed.get("f", {}).items():
        values[name] = FileRef(path)
    for name, (container, offset, size) in packed.get("m", {}).items():
        values[name] = MemberRef(container, offset, size)
    for name, reason in packed.get("e", {}).items():
        values[name] = InvalidValue(reason)
    return values
