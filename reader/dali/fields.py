"""The extra fields of a DALI loader (`make_dali_loader(fields=...)`): how each is returned, the
pipeline outputs that carry it, and each batch's values of it. Free of DALI imports.

- A mask (a png field with geometry "mask") is decoded as stored, 8 bits per channel (a palette
  expanded to RGB, 1, 2 and 4 bits scaled to 0..255: what OpenCV's `IMREAD_UNCHANGED` gives),
  and follows the image: the same crop window, flip and output size, resized nearest-neighbour.
  uint8 (B, size, size, C) on the CPU, (B, C, size, size) with `device="gpu"`. A 16-bit mask,
  which DALI's decoder would scale to 8 bits, and a mask whose size is not its image's are
  refused with a `ShardFormatError` naming the sample.
- A class field that every sample holds: int64 (B,) labels, like `cls`, on the images' device.
- Anything else (class ids, arrays, text, JSON, raw bytes, other images, optional class
  fields): for each sample the member's bytes as a uint8 tensor, a zstd frame decompressed with
  its field's dictionary, None where an optional field's member is absent.
  `fastpack.formats.decode_value(spec, bytes(t.numpy()))` decodes one.

Refused when the loader is made: boxes (they would have to follow the crop and flip, which this
reader does not do for them), optional masks (a batch of masks has no place for one a sample
lacks), the image and label fields (already returned).

Record shards (`fn.readers.tfrecord`) hold the same member bytes as features
(`fastpack/<field>`), and every field above is returned as from tars, but for optional ones,
which are refused: that reader cannot batch a record that lacks a feature (a 0-d tensor) with
records that hold it. It gives no source info per member either: errors name a sample by its
record (DALI's source info of the image, `<file> at index <record>`) and its key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import FieldValueError, Schema, ShardFormatError, field_type
from fastpack.formats.field_codec import FieldCodec

from ..errors import MissingFieldError
from .labels import parse_labels
from .options import LABEL_FIELD, FieldKind, FieldOutput

if TYPE_CHECKING:
    import torch

IMAGE_SOURCE = "images/source"  # each image's DALI source info: `<tar>:<offset>:<name>` (tars)
IMAGE_SHAPE = "images/shape"  # each image's (height, width, channels), read from its header
RECORD_KEY = "images/key"  # record shards: each sample's key (its `fastpack/key` feature)
SAMPLE_INDEX = "images/sample"  # fed samples (feed.py): each sample's index in the Dataset
# The pipeline outputs of each kind of field, as suffixes of its name.
OUTPUT_SUFFIXES: dict[FieldKind, tuple[str, ...]] = {
    "mask": ("", "/header", "/shape"),  # pixels, PNG bit depth and colour type, stored size
    "class": ("",),  # zero-padded ASCII decimals
    "bytes": ("", "/size", "/source"),  # zero-padded bytes, their count, source (none: absent)
}
# Record shards: a bytes field's count is -1 where a record lacks it; no source info per member.
RECORD_SUFFIXES: dict[FieldKind, tuple[str, ...]] = {**OUTPUT_SUFFIXES, "bytes": ("", "/size")}
PNG_BIT_DEPTH = 24  # byte offset of the bit depth in a PNG (in its IHDR chunk)
_WIDE_BITS = 16  # a 16-bit PNG's bit depth: masks are decoded to 8 bits


def plan_fields(  # noqa: PLR0913 -- keyword inputs
    schema: Schema,
    names: Sequence[str],
    image_field: str,
    source: str,
    *,
    label: str = LABEL_FIELD,
    records: bool = False,
) -> tuple[FieldOutput, ...]:
    """How each field of `names` is returned (module docstring); MissingFieldError for a field
    the schema lacks, ValueError for one this reader refuses. `source` names the dataset;
    `label` is the field returned as the labels; `records`: the dataset has record shards."""
    if isinstance(names, str):
        raise ValueError(f"fields is a sequence of field names, not the string {names!r}")
    if len(set(names)) != len(names):
        raise ValueError(f"fields names a field twice: {list(names)}")
    planned = tuple(_plan_field(schema, name, (image_field, label), source) for name in names)
    optional = [f.name for f in planned if f.optional]
    if records and optional:
        raise ValueError(
            f"{source}: field {optional[0]!r} is optional, and the dataset has record shards: "
            "DALI's TFRecord reader cannot batch records that lack a feature with records that "
            "hold it. From record shards the DALI reader returns required fields only; read "
            "optional ones with the Dataset (make_loader's loader='torch') or from a "
            "build with tar shards"
        )
    return planned


def _plan_field(schema: Schema, name: str, returned: tuple[str, str], source: str) -> FieldOutput:
    if name not in schema:
        raise MissingFieldError(
            f"{source}: samples hold fields {list(schema.names)}, no {name!r}; fields names "
            "the extra fields for the DALI reader to return"
        )
    if name in returned:
        what = "images" if name == returned[0] else "labels"
        raise ValueError(f"{source}: field {name!r} is returned as the {what} already")
    spec = schema[name]
    kind: FieldKind = "bytes"
    if spec.geometry == "boxes":
        raise ValueError(
            f"{source}: field {name!r} holds boxes, which follow the image's crop and flip; the "
            "DALI reader does not transform boxes"
        )
    if spec.geometry == "mask":
        if spec.optional:
            raise ValueError(
                f"{source}: mask field {name!r} is optional; a DALI batch of masks has no place "
                "for one that a sample lacks"
            )
        kind = "mask"
    elif field_type(spec.type).dali == "class" and not spec.optional:
        kind = "class"
    return FieldOutput(name=name, kind=kind, optional=spec.optional)


def output_names(
    fields: Sequence[FieldOutput], records: bool = False, fed: bool = False
) -> list[str]:
    """The pipeline's outputs, in order: images and `cls` (the labels), then what `fields` need
    (`records`: from record shards). `fed` (feed.py): images and the samples' indices, then
    what the masks need (the other fields are read from the dataset, not through DALI)."""
    if fed:
        masks = [f for f in fields if f.kind == "mask"]
        names = ["images", SAMPLE_INDEX, *([IMAGE_SHAPE] if masks else [])]
        return names + [f.name + suffix for f in masks for suffix in OUTPUT_SUFFIXES["mask"]]
    names = ["images", LABEL_FIELD]
    if not fields:
        return names
    names.append(IMAGE_SOURCE)
    if records:
        names.append(RECORD_KEY)
    if any(f.kind == "mask" for f in fields):
        names.append(IMAGE_SHAPE)
    suffixes = RECORD_SUFFIXES if records else OUTPUT_SUFFIXES
    for f in fields:
        names += [f.name + suffix for suffix in suffixes[f.kind]]
    return names


def _strings(padded: torch.Tensor) -> list[str]:
    """The rows of a (batch, width) uint8 tensor of zero-padded ASCII."""
    return [bytes(row).rstrip(b"\0").decode("utf-8", "replace") for row in padded.numpy()]


def _sample(info: str) -> str:
    """`<tar>: key <key>` from a DALI source info `<tar>:<offset>:<member name>`."""
    tar, _, member = info.rsplit(":", 2)
    return f"{tar}: key {member.split('.', 1)[0]}"


class FieldBatch:
    """One DALI batch's outputs (by `output_names`), its first `take` samples read as values;
    `records` for a batch of record shards; `samples`: how errors name each sample (default:
    from DALI's source info)."""

    def __init__(
        self,
        batch: Mapping[str, torch.Tensor],
        take: int,
        source: str,
        records: bool = False,
        samples: Sequence[str] | None = None,
    ) -> None:
        self._batch, self._take, self._source = batch, take, source
        self._records = records
        if samples is not None:
            self._samples = list(samples)
            return
        infos = _strings(batch[IMAGE_SOURCE][:take])
        if records:
            keys = _strings(batch[RECORD_KEY][:take])
            self._samples = [f"{info} (key {key})" for info, key in zip(infos, keys, strict=True)]
        else:
            self._samples = [_sample(info) for info in infos]

    def _numpy(self, name: str) -> npt.NDArray[Any]:
        array: npt.NDArray[Any] = self._batch[name][: self._take].numpy()
        return array

    def values(
        self, fields: Sequence[FieldOutput], codecs: Mapping[str, FieldCodec], device: Any
    ) -> dict[str, Any]:
        """Each field's values (module docstring); `codecs`: those of the zstd fields."""
        import torch  # noqa: PLC0415 -- optional: torch

        out = self.masks(fields)
        for f in fields:
            if f.kind == "class":
                labels = parse_labels(self._numpy(f.name), self._source, f.name)
                out[f.name] = torch.from_numpy(labels).to(device, non_blocking=True)
            elif f.kind == "bytes":
                out[f.name] = self._members(f, codecs.get(f.name))
        return out

    def masks(self, fields: Sequence[FieldOutput]) -> dict[str, Any]:
        """The masks of `fields` (the others are left out), checked."""
        out: dict[str, Any] = {}
        for f in fields:
            if f.kind == "mask":
                self._check_mask(f.name)
                out[f.name] = self._batch[f.name][: self._take]
        return out

    def _check_mask(self, name: str) -> None:
        """Refuse a batch with a 16-bit mask or a mask whose size is not its image's."""
        header, shape = self._numpy(f"{name}/header"), self._numpy(f"{name}/shape")
        image = self._numpy(IMAGE_SHAPE)
        wide = np.flatnonzero(header[:, 0] == _WIDE_BITS)
        if wide.size:
            raise ShardFormatError(
                f"{self._samples[wide[0]]}: mask {name!r} is a 16-bit PNG; the DALI reader "
                "decodes masks to 8 bits, which would change its values"
            )
        other = np.flatnonzero((shape[:, :2] != image[:, :2]).any(axis=1))
        if other.size:
            k = int(other[0])
            raise ShardFormatError(
                f"{self._samples[k]}: mask {name!r} is {shape[k, 0]}x{shape[k, 1]} pixels, its "
                f"image {image[k, 0]}x{image[k, 1]}"
            )

    def _members(self, f: FieldOutput, codec: FieldCodec | None) -> list[torch.Tensor | None]:
        import torch  # noqa: PLC0415 -- optional: torch

        data = self._batch[f.name][: self._take]
        sizes, present = self._presence(f)
        members: list[torch.Tensor | None] = []
        for k, (size, here) in enumerate(zip(sizes, present, strict=True)):
            if not here:
                if not f.optional:
                    raise ShardFormatError(
                        f"{self._samples[k]}: no {f.name!r} member, but the field is not optional"
                    )
                members.append(None)
                continue
            member = data[k, :size]
            if codec is None:
                members.append(member.clone())
                continue
            try:
                plain = codec.decompress(member.numpy().tobytes())
            except FieldValueError as e:
                raise FieldValueError(f"{self._samples[k]}: member {f.name!r}: {e}") from e
            members.append(torch.from_numpy(np.frombuffer(plain, np.uint8).copy()))
        return members

    def _presence(self, f: FieldOutput) -> tuple[list[int], list[bool]]:
        """Each sample's member size of field `f`, and whether the sample holds the member: from
        tars by its source info, from records by its size (-1 where the record lacks it)."""
        counts: npt.NDArray[Any] = self._numpy(f"{f.name}/size")
        if not self._records:
            sources: npt.NDArray[Any] = self._numpy(f"{f.name}/source")
            return counts[:, 0].tolist(), np.any(sources, axis=1).tolist()
        sizes: list[int] = counts[:, 0].tolist() if counts.shape[1] else [-1] * self._take
        return [max(size, 0) for size in sizes], [size >= 0 for size in sizes]
