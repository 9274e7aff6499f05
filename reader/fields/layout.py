"""How each returned field is batched, known from the schema and the transform before any sample
is read (formats/SPEC.md section 2.1 for the field types). The kinds of column:

- `slot`: jpeg with a transform, `mask` png with a transform: one uint8 array `(B, *shape)`,
  decoded in place (in shared memory under `make_loader`);
- `stack`: jpeg and png without a fixed size: one array `(B, H, W[, C])`; the images of a batch
  must share a size;
- `array`: class, ndarray of a fixed schema shape: one array, `(B,)` int64 or `(B, *shape)`;
- `padded`: class_ids and other ndarrays (boxes) with `pad=True`: `Padded(values (B, L, ...),
  lengths (B,))`;
- `list`: text, json, raw, and class_ids and other ndarrays without `pad`, and every optional
  field (but for `padded` ones): a list, None for an absent member.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fastpack.formats import FieldSpec, Schema, field_type
from fastpack.formats.schema import IMAGE_TYPE

from ..image.transforms import Transform
from .images import image_reader

ColumnKind = Literal["slot", "stack", "array", "padded", "list"]


@dataclass(frozen=True, slots=True)
class Column:
    """One returned field and how it is decoded and batched."""

    spec: FieldSpec
    kind: ColumnKind
    shape: tuple[int, ...] = ()  # per sample, for a `slot` column (uint8)
    from_label: bool = False  # a class read from the index's label section, not its member
    follows_image: bool = False  # geometry that goes through the transform with the image

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass(frozen=True, slots=True)
class BatchLayout:
    """The columns of a reader's samples and batches, in the order asked for. `image_label`:
    exactly the image and the label, both required: the `(images, labels)` fast path."""

    columns: tuple[Column, ...]
    image_label: bool

    @property
    def kinds(self) -> tuple[ColumnKind, ...]:
        return tuple(c.kind for c in self.columns)

    def slot_shapes(self, batch_size: int) -> tuple[tuple[int, ...], ...]:
        """The uint8 arrays of a full batch that are decoded in place, in column order."""
        return tuple((batch_size, *c.shape) for c in self.columns if c.kind == "slot")


def _column(spec: FieldSpec, schema: Schema, transform: Transform | None, pad: bool) -> Column:
    ftype = field_type(spec.type)
    follows = transform is not None and spec.geometry is not None
    label = spec.name == schema.label_field
    variable = ftype.batch == "ragged" or (
        ftype.batch == "shaped" and (not spec.fixed_shape or (follows and spec.geometry == "boxes"))
    )
    if spec.optional:
        kind: ColumnKind = "padded" if pad and variable else "list"
        return Column(spec, kind, from_label=label, follows_image=follows)
    if transform is not None and ftype.image and (spec.type == IMAGE_TYPE or follows):
        shape = (*transform.output_shape, *image_reader(spec.type).channels)
        return Column(spec, "slot", shape, follows_image=follows)
    if ftype.image:
        return Column(spec, "stack")
    if ftype.batch == "scalar" or (ftype.batch == "shaped" and not variable):
        return Column(spec, "array", from_label=label)
    if variable:
        return Column(spec, "padded" if pad else "list", follows_image=follows)
    return Column(spec, "list")


def plan_columns(
    schema: Schema,
    names: Sequence[str],
    *,
    image: str | None,
    transform: Transform | None,
    pad: bool,
) -> BatchLayout:
    """The layout of the fields `names` of `schema` read with `transform` (`image`: the
    image field, whose label pair is the fast path)."""
    columns = tuple(_column(schema[n], schema, transform, pad) for n in names)
    label = schema.label_field
    image_label = (
        image is not None
        and label is not None
        and tuple(names) == (image, label)
        and not schema[image].optional
        and not schema[label].optional
    )
    return BatchLayout(columns, image_label)
