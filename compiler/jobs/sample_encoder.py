"""One sample's members, in schema order, from its prepared image, its planned label and its
other fields (formats/SPEC.md sections 2.1 and 4.1); or the field that rejects it, and why.

- the image field holds the prepared image; other jpeg fields go through the image policy too;
- the label field holds the plan's label, unless the sample's fields hold a value under its
  name (a source that could not number it; `null`: the sample has no label);
- every other field's value comes from the sample's fields, references read, list-file cells
  parsed, and is encoded (and compressed) by the field's codec;
- a mask must have the image's size before any shrink (upright), and is shrunk with the image;
  boxes are scaled with it;
- a field missing (or `null`) is absent when optional, else it rejects the sample.

Every value from the input goes through `images.guard.guarded` on its way to a member (references
read, cells parsed, masks measured and shrunk, codecs), so whatever a parser raises on it rejects
the sample with that field's name and the error's words, and never fails the shard job.

A codec (with its zstd dictionary) is made once per encoder, that is once per shard job. A
shard job hands the encoder all its rows' values first (`prepare`): each field whose inline
values go straight to its codec is encoded for the whole shard at once, by its type's
`encode_all` (formats/field_types/), not value by value in the per-sample loop.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from fastpack.formats import (
    FieldSpec,
    FieldTypeDef,
    FieldValueError,
    Schema,
    decode_value,
    encode_value,
    field_type,
)
from fastpack.formats.field_codec import FieldCodec
from fastpack.formats.image_header import DEFAULT_PIXEL_BUDGET
from fastpack.formats.schema import IMAGE_TYPE

from ..images.geometry import png_size, scale_boxes, shrink_mask
from ..images.guard import guarded_value
from ..images.policy import Check, PreparedImage, Reject, prepare_image
from ..sources.sample_fields import FileRef, InvalidValue, MemberRef, unpack_fields
from .field_values import parse_cell, resolve
from .inputs import InputReader

_MISSING = object()
_REFERENCES = (FileRef, MemberRef, InvalidValue)
Prepared = bytes | FieldValueError | None  # a field's member, why its value does not fit, or
# None: not prepared (absent, a reference, a cell, or a field that is not `direct`)


@dataclass(frozen=True, slots=True)
class FieldReject:
    """A sample rejected for its field `field` (None: its image)."""

    field: str | None
    reason: str


class Encoded(NamedTuple):
    """A sample's members (present ones, in schema order), their positions in the schema, the
    value of its label field for the index (-1: none), and notes on jpeg fields stored
    otherwise than asked (kept as they were, not transcoded as asked)."""

    members: list[tuple[str, bytes]]
    positions: list[int]
    label: int
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class ImageOptions:
    max_side: int | None
    quality: int
    check: Check
    baseline: bool = False
    restart_width: int = 0
    pixel_budget: int = DEFAULT_PIXEL_BUDGET
    strict: bool = False  # a jpeg field's value stored otherwise than asked rejects the sample

    def prepare(self, data: bytes) -> PreparedImage | Reject:
        """`prepare_image` of `data` under these options."""
        return prepare_image(
            data,
            max_side=self.max_side,
            quality=self.quality,
            check=self.check,
            baseline=self.baseline,
            restart_width=self.restart_width,
            pixel_budget=self.pixel_budget,
        )


class _Field(NamedTuple):
    """A field as the encoder walks it: `direct` when an inline value goes straight to its
    codec (no image policy, no geometry)."""

    position: int
    name: str
    spec: FieldSpec
    codec: FieldCodec
    direct: bool
    kind: FieldTypeDef


_READY, _IMAGE, _LABEL = 0, 1, 2  # where a ready row's member comes from


def _role(name: str, image: str | None, label: str | None) -> int:
    return _IMAGE if name == image else _LABEL if name == label else _READY


class SampleEncoder:
    def __init__(
        self,
        schema: Schema,
        dictionaries: Mapping[str, bytes],
        reader: InputReader,
        images: ImageOptions,
        *,
        text_cells: bool,
    ) -> None:
        self._fields = [
            _Field(
                k,
                s.name,
                s,
                FieldCodec(s, dictionaries.get(s.name)),
                s.type != IMAGE_TYPE and s.geometry is None,
                field_type(s.type),
            )
            for k, s in enumerate(schema.fields)
        ]
        self._prepared: list[list[Prepared] | None] = [None] * len(self._fields)
        self._ready: list[bool] = []
        self._assembly: list[tuple[str, list[Prepared], int]] = []
        self._positions = list(range(len(self._fields)))
        self._image = schema.image_field
        self._label = schema.label_field
        self._reader = reader
        self._images = images
        self._text_cells = text_cells

    def prepare(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Encode (and compress) the inline values of a shard's `rows` (each an unpacked
        sample's fields) of every `direct` field, a column at a time; `encode_row(..., k)`
        then takes row `k`'s members from here. A row whose every member but the image is
        ready (or the plan's label) is `ready`: `encode_row` only puts it together."""
        ready = [True] * len(rows)
        for field in self._fields:
            if field.name == self._image:
                continue
            if not field.direct:
                ready = [False] * len(rows)
                continue
            name, cells = field.name, self._text_cells
            inline = [
                (k, value)
                for k, row in enumerate(rows)
                if (value := row.get(name)) is not None
                and not isinstance(value, _REFERENCES)
                and not (cells and isinstance(value, str))
            ]
            try:
                encoded = field.kind.encode_all([value for _, value in inline], field.spec)
            except MemoryError:
                raise
            except Exception:  # a value it cannot take: each says for itself, row by row
                ready = [False] * len(rows)
                continue
            compress = None if field.codec.plain else field.codec.compress
            column: list[Prepared] = [None] * len(rows)
            for (k, _), data in zip(inline, encoded, strict=True):
                plain = compress is None or isinstance(data, FieldValueError)
                column[k] = data if plain else compress(data)  # type: ignore[misc,arg-type]
            for k, member in enumerate(column):
                if type(member) is not bytes and not (name == self._label and name not in rows[k]):
                    ready[k] = False
            self._prepared[field.position] = column
        self._ready = ready
        self._assembly = [
            (f.name, self._prepared[f.position] or [], _role(f.name, self._image, self._label))
            for f in self._fields
        ]

    def encode(
        self, image: PreparedImage | None, label: int, packed: bytes
    ) -> Encoded | FieldReject:
        """One sample's members from its packed fields (`pack_fields`), by itself."""
        self._prepared = [None] * len(self._fields)
        self._ready = []
        return self.encode_row(image, label, unpack_fields(packed), -1)

    def encode_row(
        self, image: PreparedImage | None, label: int, values: Mapping[str, Any], k: int
    ) -> Encoded | FieldReject:
        """The members of row `k` of the last `prepare` (-1: none), whose fields are
        `values`."""
        if 0 <= k < len(self._ready) and self._ready[k] and (image is not None or not self._image):
            return self._ready_row(image, label, k)
        return self._row(image, label, values, k)

    def _row(
        self, image: PreparedImage | None, label: int, values: Mapping[str, Any], k: int
    ) -> Encoded | FieldReject:
        """`encode_row` field by field: references read, cells parsed, images prepared."""
        members: list[tuple[str, bytes]] = []
        positions: list[int] = []
        notes: tuple[str, ...] = ()
        index_label = -1
        for position, name, spec, codec, direct, _ in self._fields:
            value = values.get(name, _MISSING)
            if name == self._image and image is not None:
                data = image.data
            elif name == self._label and value is _MISSING:  # the plan's label
                data, index_label = str(label).encode("ascii"), label
            else:
                if value is _MISSING or value is None:
                    if spec.optional:
                        continue
                    return FieldReject(name, "missing (a required field)")
                column = self._prepared[position]
                ready = column[k] if column is not None and k >= 0 else None
                try:
                    if isinstance(ready, FieldValueError):
                        raise ready
                    if ready is not None:
                        data = ready
                    elif (
                        direct
                        and not isinstance(value, _REFERENCES)
                        and not (self._text_cells and isinstance(value, str))
                    ):
                        data = guarded_value(codec.encode, value)
                    else:
                        data, note = guarded_value(self._member, spec, codec, value, image)
                        notes += (f"field {name!r}: {note}",) if note is not None else ()
                except FieldValueError as e:
                    return FieldReject(name, str(e))
                if name == self._label:
                    index_label = int(data)
            members.append((name, data))
            positions.append(position)
        return Encoded(members, positions, index_label, notes)

    def _ready_row(self, image: PreparedImage | None, label: int, k: int) -> Encoded:
        """The members of a `ready` row `k` of the last `prepare`."""
        members: list[tuple[str, bytes]] = []
        index_label = -1
        for name, column, role in self._assembly:
            if role == _READY:
                members.append((name, column[k]))  # type: ignore[arg-type]  # ready: bytes
            elif role == _IMAGE:
                members.append((name, image.data))  # type: ignore[union-attr]  # ready: an image
            else:  # the label: its own, or (None) the plan's
                data = column[k]
                if data is None:
                    data, index_label = b"%d" % label, label
                else:
                    index_label = int(data)  # type: ignore[arg-type]  # ready: bytes
                members.append((name, data))  # type: ignore[arg-type]
        return Encoded(members, self._positions, index_label)

    def _member(
        self, spec: FieldSpec, codec: FieldCodec, value: Any, image: PreparedImage | None
    ) -> tuple[bytes, str | None]:
        """The member bytes of one field's value: references read, cells parsed, images and
        geometry handled; FieldValueError says why it does not fit. With them, a jpeg field's
        note (stored otherwise than asked), else None. Called through `guarded_value`."""
        value = resolve(value, self._reader)
        if self._text_cells and isinstance(value, str):
            value = parse_cell(spec, value)
        if spec.type == IMAGE_TYPE:
            return self._jpeg(value)
        if image is not None and spec.geometry == "mask":
            value = _fit_mask(value, image)
        elif image is not None and spec.geometry == "boxes" and image.shrunk:
            boxes = decode_value(spec, encode_value(spec, value))  # checked, as an array
            sy, sx = (a / b for a, b in zip(image.size, image.upright_size, strict=True))
            value = scale_boxes(boxes, (sy, sx))
        return codec.encode(value), None

    def _jpeg(self, value: Any) -> tuple[bytes, str | None]:
        if not isinstance(value, bytes):
            raise FieldValueError(f"a jpeg value is bytes, found {type(value).__name__}")
        prepared = self._images.prepare(value)
        if isinstance(prepared, Reject):
            raise FieldValueError(prepared.reason)
        if prepared.note is not None and self._images.strict:
            raise FieldValueError(prepared.note)
        return prepared.data, prepared.note


def _fit_mask(value: Any, image: PreparedImage) -> bytes:
    """The mask PNG, checked against the image's size (from its header, before it is decoded:
    so within the image's pixel budget) and shrunk with it; a MaskError (a ValueError) becomes
    the field's reason through `guarded_value`."""
    if not isinstance(value, bytes):
        raise FieldValueError(f"a mask is PNG bytes, found {type(value).__name__}")
    size = png_size(value)
    if size != image.upright_size:
        (h, w), (ih, iw) = size, image.upright_size
        raise FieldValueError(f"mask of {w}x{h} pixels, its image is {iw}x{ih}")
    return shrink_mask(value, image.size) if image.shrunk else value
