"""A batch of full-size JPEGs decoded into one array: every image must have the first's size."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence

from .decode import DEFAULT_OPTIONS, DecodeOptions, Image, JpegData, decode_checked, jpeg_size
from .guard import naming

Allocate = Callable[[tuple[int, ...]], Image]
DecodeError = Callable[[int, ValueError], Exception]  # the error of the k-th image


def decode_same_size(  # noqa: PLR0913 -- keyword inputs
    payloads: Sequence[JpegData],
    rows: Sequence[int],
    allocate: Allocate,
    where: str,
    error: DecodeError,
    *,
    options: DecodeOptions = DEFAULT_OPTIONS,
) -> Image:
    """`payloads` (the JPEGs of samples `rows`) decoded into one `(B, H, W, 3)` array from
    `allocate`, called once, after every header is read and checked against
    `options.pixel_budget`. A ValueError naming two samples (`where`: the dataset) when the
    sizes differ; `error(k, e)` is raised for a JPEG `k` whose header or data does not decode
    or is over the budget."""
    sizes = []
    for k, data in enumerate(payloads):
        with naming(functools.partial(error, k)):
            sizes.append(jpeg_size(data, options.pixel_budget))
    if any(s != sizes[0] for s in sizes):
        k = next(k for k, s in enumerate(sizes) if s != sizes[0])
        raise ValueError(
            f"{where}: samples {rows[0]} and {rows[k]} have sizes {sizes[0]} and {sizes[k]}; "
            "batching needs one size: give the dataset a transform (RandomResizedCrop, "
            "CenterCrop) or read samples one at a time"
        )
    height, width = sizes[0] if sizes else (0, 0)
    images = allocate((len(payloads), height, width, 3))
    for k, data in enumerate(payloads):
        with naming(functools.partial(error, k)):
            decode_checked(data, options, images[k])  # its header checked above
    return images
