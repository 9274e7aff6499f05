"""The check a build gives a sample's bytes, for a sample whose bytes stay as they are.

Each jpeg field goes through the image policy (`images.policy.prepare_image`, with the
structure walk of `images.jpeg_structure`, or a strict decode with `check="decode"`); a JPEG
the policy keeps as it is passes, and any other image is refused: an index cannot convert it in
place. Every other field's member is decoded by its type and checked against its spec, as
`verify` checks a built dataset's members; a mask must have its image's size. A required field
without a member refuses the sample. Every call on the bytes runs through `images.guard`, so
no member's content raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from fastpack.formats import FieldSpec, FieldValueError, Schema, decode_value, field_type
from fastpack.formats.schema import IMAGE_TYPE

from ..images.geometry import png_size
from ..images.guard import InputError, guarded_value
from ..images.policy import JPEG_MAGIC, Check, Reject, prepare_image

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_USE_BUILD = (
    "`fastpack index` keeps shards as they are, so only JPEG images can be indexed: use "
    "`fastpack build`"
)
_KINDS = (
    (PNG_MAGIC, "PNG"),
    (b"RIFF", "WebP"),
    (b"GIF8", "GIF"),
    (b"BM", "BMP"),
    (b"II*\0", "TIFF"),
    (b"MM\0*", "TIFF"),
)


@dataclass(frozen=True, slots=True)
class SampleReject:
    """Why a sample is left out: the field that refuses it (None: its image) and the reason."""

    field: str | None
    reason: str


def _kind(data: bytes) -> str:
    """What an image that is not a JPEG looks like, by its first bytes."""
    return next((name for magic, name in _KINDS if data.startswith(magic)), "not a JPEG")


def check_jpeg(data: bytes, check: Check) -> tuple[int, int] | str:
    """`(height, width)` of a JPEG the build would keep as it is, or why it cannot be kept."""
    if not data.startswith(JPEG_MAGIC):
        kind = _kind(data)
        said = f"image is {kind}" if kind != "not a JPEG" else "image is not a JPEG"
        return f"{said}; {_USE_BUILD}"
    prepared = prepare_image(data, check=check)
    if isinstance(prepared, Reject):
        return prepared.reason
    if prepared.converted:
        return (
            "a JPEG that a build converts (not three-component YCbCr, or turned by its EXIF "
            f"orientation); {_USE_BUILD}"
        )
    return prepared.size


class SampleChecker:
    """Checks the members of one schema's samples; `label` is checked by the caller."""

    def __init__(self, schema: Schema, check: Check) -> None:
        self.schema = schema
        self.check = check
        self._image = schema.image_field
        self._label = schema.label_field

    def reject(self, members: Mapping[str, bytes]) -> SampleReject | None:
        """Why the sample whose fields hold `members` (field name -> bytes; absent fields left
        out) is left out, or None when it is kept."""
        size: tuple[int, int] | None = None
        for spec in self.schema.fields:
            name = spec.name
            data = members.get(name)
            if data is None:
                if spec.optional or name == self._label:
                    continue
                missing = "missing (a required field)"
                return SampleReject(None if name == self._image else name, missing)
            if name == self._label:
                continue
            if spec.type == IMAGE_TYPE:
                found = check_jpeg(data, self.check)
                if isinstance(found, str):
                    return SampleReject(None if name == self._image else name, found)
                if name == self._image:
                    size = found
                continue
            try:
                guarded_value(_check_member, spec, data, size)
            except (InputError, FieldValueError) as e:
                return SampleReject(name, str(e))
        return None


def _check_member(spec: FieldSpec, data: bytes, image: tuple[int, int] | None) -> None:
    """Raise FieldValueError unless `data` is a member of field `spec` (SPEC 4.1)."""
    if spec.zstd is not None:
        raise FieldValueError("a zstd field cannot be indexed in place")
    value = decode_value(spec, data)
    field_type(spec.type).check_value(value, spec)
    if spec.geometry == "mask" and image is not None:
        size = png_size(data)
        if size != image:
            raise FieldValueError(
                f"mask of {size[1]}x{size[0]} pixels, its image is {image[1]}x{image[0]}"
            )
