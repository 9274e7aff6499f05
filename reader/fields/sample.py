"""`SampleDecoder`: the asked fields of one sample, from their member bytes to their values.

| type | value |
| --- | --- |
| jpeg | HxWx3 uint8 RGB, through the transform (every jpeg field asked, with the same draws) |
| png | HxW or HxWxC as stored (RGB channel order); a `mask` with a transform: the output's size |
| class | np.int64 (the label field's from the index) |
| class_ids | int64 array |
| ndarray | the array; `boxes` with a transform: in the output's coordinates (see `crop_boxes`) |
| text, json, raw | str, the parsed value, bytes |

An absent member of an optional field is None.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt
from fastpack.formats import AbsentFieldError, DatasetFiles, field_type
from fastpack.formats.field_codec import FieldCodec
from fastpack.formats.image_header import DEFAULT_PIXEL_BUDGET
from fastpack.formats.schema import IMAGE_TYPE

from ..image.batch import Allocate
from ..image.decode import jpeg_size
from ..image.geometry import Crop, crop_boxes, crop_mask
from ..image.guard import named_decode_error
from ..image.transforms import GeometryTransform, Transform
from .images import ImageReader, Payload, image_reader
from .layout import BatchLayout, Column

AnyArray = npt.NDArray[Any]
PayloadOf = Callable[[str], Payload | None]  # a field's member bytes; None when it is absent
Where = Callable[[int, str], str]  # how errors name sample i's member of a field


def check_geometry(layout: BatchLayout, transform: Transform | None, where: str) -> None:
    """A ValueError unless `transform` can move the geometry fields of `layout` with the image."""
    following = [c.name for c in layout.columns if c.follows_image]
    if following and not callable(getattr(transform, "crop", None)):
        raise ValueError(
            f"{where}: fields {following} follow the image through the transform, but "
            f"{transform!r} has no crop() to say where its output comes from "
            "(RandomResizedCrop and CenterCrop have)"
        )


class SampleDecoder:
    """Decodes the fields of `layout`, one sample at a time. Holds the fields' codecs (zstd
    contexts): one decoder per process or thread. `where(i, field)` names a member in errors;
    `image` is the field that geometry follows. An image member decoded here (not by the
    transform) is refused over `pixel_budget` samples (PixelBudgetError naming it); every decode
    error names the sample (`image.guard.named_decode_error`)."""

    def __init__(  # noqa: PLR0913 -- keyword inputs
        self,
        files: DatasetFiles,
        layout: BatchLayout,
        *,
        image: str | None,
        transform: Transform | None,
        drop_empty_boxes: bool,
        where: Where,
        pixel_budget: int = DEFAULT_PIXEL_BUDGET,
    ) -> None:
        self.layout, self.transform, self.image = layout, transform, image
        self.drop_empty_boxes = drop_empty_boxes
        self.where = where
        self.pixel_budget = pixel_budget
        self.labels: npt.NDArray[np.int64] = files.index.label.view(np.ndarray)
        self._images: list[ImageReader | None] = [
            image_reader(c.spec.type) if field_type(c.spec.type).image else None
            for c in layout.columns
        ]
        self._codecs: list[FieldCodec | None] = [
            None if image is not None or c.from_label else files.codec(c.name)
            for c, image in zip(layout.columns, self._images, strict=True)
        ]
        self._geometry = any(c.follows_image for c in layout.columns)

    def decode(
        self,
        i: int,
        payload_of: PayloadOf,
        draws: Sequence[float] | None,
        outs: Sequence[AnyArray | None] | None = None,
    ) -> list[Any]:
        """The values of sample `i`, in column order; a `slot` column's into `outs[k]` when
        given (the value is then that array)."""
        crop = self._crop(i, payload_of, draws) if self._geometry else None
        values: list[Any] = []
        for k, column in enumerate(self.layout.columns):
            if column.from_label and not column.spec.optional:
                values.append(self.labels[i])
                continue
            data = payload_of(column.name)
            if data is None:
                if not column.spec.optional:
                    raise AbsentFieldError(
                        f"{self.where(i, column.name)} is absent, but the field is not optional"
                    )
                values.append(None)
                continue
            if column.from_label:
                values.append(self.labels[i])
                continue
            out = None if outs is None else outs[k]
            try:
                values.append(self._value(k, column, data, draws=draws, crop=crop, out=out))
            except ValueError as e:  # FieldValueError included: it gains the sample's name
                raise named_decode_error(self.where(i, column.name), e) from e
        return values

    def _crop(self, i: int, payload_of: PayloadOf, draws: Sequence[float] | None) -> Crop | None:
        """Where the transformed image of sample `i` comes from (geometry follows it)."""
        transform = self.transform
        if transform is None or self.image is None:
            return None
        data = payload_of(self.image)
        if data is None:
            raise AbsentFieldError(
                f"{self.where(i, self.image)} is absent: the sample's geometry has no image "
                "to follow"
            )
        try:
            height, width = jpeg_size(data, self.pixel_budget)
        except ValueError as e:
            raise named_decode_error(self.where(i, self.image), e) from e
        return cast(GeometryTransform, transform).crop(height, width, draws)

    def _value(  # noqa: PLR0913 -- keyword inputs
        self,
        k: int,
        column: Column,
        data: Payload,
        *,
        draws: Sequence[float] | None,
        crop: Crop | None,
        out: AnyArray | None,
    ) -> Any:
        if column.spec.type == IMAGE_TYPE and self.transform is not None:
            return self.transform(data, draws, out)
        reader = self._images[k]
        if reader is not None:
            image = reader.decode(data, self.pixel_budget)
            if crop is not None and column.follows_image:
                return crop_mask(image, crop, out)
            return image
        codec = self._codecs[k]
        if codec is None:
            raise RuntimeError(f"field {column.name!r} has no codec")
        value = codec.decode(data)
        if crop is not None and column.follows_image and column.spec.geometry == "boxes":
            return crop_boxes(value, crop, drop_empty=self.drop_empty_boxes)
        return value

    def decode_batch(
        self,
        rows: Sequence[int],
        payloads: Callable[[int], PayloadOf],
        draws: Sequence[Sequence[float] | None],
        allocate: Allocate,
        after_sample: Callable[[], None],
    ) -> list[list[Any]]:
        """The values of samples `rows` by column: `slot` columns decoded in place into arrays
        from `allocate` (one `(B, *shape)` call per column, in column order, before any decode;
        their lists hold that one array), the others one value per sample. `after_sample` runs
        after each sample."""
        n = len(rows)
        outs: list[AnyArray | None] = [
            allocate((n, *c.shape)) if c.kind == "slot" else None for c in self.layout.columns
        ]
        columns: list[list[Any]] = [[] if out is None else [out] for out in outs]
        for k, i in enumerate(rows):
            sample_outs = [None if out is None else out[k] for out in outs]
            values = self.decode(i, payloads(i), draws[k], sample_outs)
            for c, value in enumerate(values):
                if outs[c] is None:
                    columns[c].append(value)
            after_sample()
        return columns
