"""The fast path of a `Dataset` whose sample is its image and its label: one image decoded whole
or through the transform, and a batch of them decoded into one array.

`ImageDecoding` holds what a decode needs, taken from the dataset for each call: the image field,
the transform and its random draws, the pixel budget, and where batch arrays come from.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from fastpack.formats import FastpackError

from ..image.batch import decode_same_size
from ..image.decode import DecodeOptions, Image, decode, jpeg_size
from ..image.draws import sample_draws
from ..image.guard import named_decode_error, naming, needs_name
from ..image.transforms import Transform
from .opened import Opened, member_name


def draws(
    transform: Transform | None, seed: int, rows: list[int], epoch: int
) -> list[list[float]] | list[None]:
    """The random draws of `transform` for `rows` in epoch `epoch` (`sample_draws`); None for
    each row of a transform that draws nothing."""
    count = 0 if transform is None else transform.draws
    if count == 0:
        return [None] * len(rows)
    values: list[list[float]] = sample_draws(seed, epoch, rows, count).tolist()
    return values


@dataclass(frozen=True)
class ImageDecoding:
    """Decodes the members of the image field `image`: whole without a transform, else through
    `transform` with the draws of `seed`; every header within `pixel_budget` (`check_header`:
    checked here, before a transform that checks no budget of its own). `new_batch` allocates
    a batch's array; `where` names the dataset."""

    image: str
    transform: Transform | None
    seed: int
    pixel_budget: int
    check_header: bool
    new_batch: Callable[[tuple[int, ...]], Image]
    where: str

    def sample(self, state: Opened, row: int, epoch: int) -> Image:
        """The image of index row `row`."""
        data = state.payload(row, self.image)
        with naming(functools.partial(self.error, state, row)):
            if self.transform is None:
                return decode(data, DecodeOptions(pixel_budget=self.pixel_budget))
            if self.check_header:
                jpeg_size(data, self.pixel_budget)
            return self.transform(data, draws(self.transform, self.seed, [row], epoch)[0], None)

    def batch(self, state: Opened, rows: list[int], epoch: int) -> Image:
        """The images of `rows` in one `(B, H, W, 3)` array: without a transform every image
        must have the same size (else ValueError)."""
        transform = self.transform
        if transform is None:
            return decode_same_size(
                [state.payload(i, self.image) for i in rows],
                rows,
                self.new_batch,
                self.where,
                lambda k, e: self.error(state, rows[k], e),
                options=DecodeOptions(pixel_budget=self.pixel_budget),
            )
        images = self.new_batch((len(rows), *transform.output_shape, 3))
        row_draws = draws(transform, self.seed, rows, epoch)
        places = state.places(rows, self.image)
        for k, data in enumerate(state.payloads(rows, self.image, places)):
            try:  # `naming` inline: a context manager per sample costs more
                if self.check_header:
                    jpeg_size(data, self.pixel_budget)
                transform(data, row_draws[k], images[k])
            except ValueError as e:
                if not needs_name(e):
                    raise
                raise self.error(state, rows[k], e) from e
            state.shards.release_range(*places[k])  # keep shard pages out of this PSS
        return images

    def encoded(self, state: Opened, rows: list[int]) -> EncodedImages:
        """The members of `rows` as stored, joined into one array, each header checked
        against the pixel budget first (an error names the sample)."""
        parts, sizes = [], np.empty((len(rows), 2), np.int64)
        for k, data in enumerate(state.payloads(rows, self.image)):
            try:
                sizes[k] = jpeg_size(data, self.pixel_budget)
            except ValueError as e:
                if not needs_name(e):
                    raise
                raise self.error(state, rows[k], e) from e
            parts.append(np.frombuffer(data, np.uint8))
        offsets = np.zeros(len(rows) + 1, np.int64)
        np.cumsum([len(p) for p in parts], out=offsets[1:])
        joined = np.concatenate(parts) if parts else np.empty(0, np.uint8)
        return EncodedImages(
            data=joined, offsets=offsets, sizes=sizes, rows=np.array(rows, np.int64)
        )

    def error(self, state: Opened, row: int, error: ValueError) -> FastpackError:
        """A decoder's ValueError as an error that names the sample: a PixelBudgetError stays
        one, anything else is a ShardFormatError (`image.guard.named_decode_error`)."""
        return named_decode_error(member_name(state.files, row, self.image), error)


@dataclass(frozen=True)
class EncodedImages:
    """A batch's JPEG members as stored: image `k` is `data[offsets[k]:offsets[k + 1]]`, of
    `sizes[k]` = (height, width) pixels as its header says, from index row `rows[k]`."""

    data: npt.NDArray[np.uint8]
    offsets: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    rows: npt.NDArray[np.int64]
