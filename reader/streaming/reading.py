"""`WindowReader`: the samples of a stream's located windows, decoded one at a time or straight
into the arrays of a batch, by the same per-sample code.

A batch is a list of `Span`s, runs of consecutive samples of one window each: the batches of a
stream follow its reading order across window boundaries. Each sample's shard pages are
released once it is decoded (`ShardFile.release`), as the map-style reader does, so that a
worker's memory does not grow with the shards it reads.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
from fastpack.formats import AbsentFieldError, DatasetFiles, FastpackError, Schema

from ..errors import MissingFieldError
from ..fields import (
    BatchLayout,
    SampleDecoder,
    assemble_columns,
    check_geometry,
    choose_fields,
    image_field,
    plan_columns,
)
from ..fields.images import Payload
from ..fields.sample import PayloadOf
from ..image.batch import Allocate, decode_same_size
from ..image.decode import Image, decode
from ..image.guard import named_decode_error, needs_name
from ..image.transforms import Transform
from ..shard_files import ShardFile
from ..stats.counts import READ_COUNTS
from .options import StreamingOptions
from .window import Window


@dataclass(frozen=True, kw_only=True)
class Columns:
    """What a sample is: the image field `field` (None: none), the fields `fields` in order,
    and how they are laid out in a batch (`layout`)."""

    field: str | None
    fields: tuple[str, ...]
    layout: BatchLayout

    @classmethod
    def of(cls, path: str, schema: Schema, options: StreamingOptions) -> Columns:
        """The columns `options` choose (`field`, `fields`, `transform`, `pad`) from the
        dataset at `path`."""
        image = image_field(schema, options.field, path)
        chosen = choose_fields(schema, options.fields, image, path)
        layout = plan_columns(
            schema, chosen, image=image, transform=options.transform, pad=options.pad
        )
        check_geometry(layout, options.transform, path)
        return cls(field=image, fields=chosen, layout=layout)


class Span(NamedTuple):
    """Samples `[start, stop)` of `window` (positions in its reading order)."""

    window: Window
    start: int
    stop: int


def member_name(path: str, files: DatasetFiles, i: int, field: str) -> str:
    """How errors name sample `i`'s member of `field` in the dataset at `path`."""
    index = files.index
    return f"{path}: sample {i} (key {index.key(i)}, shard {int(index.shard[i])}) field {field!r}"


class WindowReader:
    """Decodes samples of the dataset at `path` (its `files`) as `layout` says: on the
    `(image, label)` path (`decoder` None) the `image` field through `transform`, else every
    field through `decoder`. Batch arrays come from `allocate`; `pad_value` pads batches of
    variable-length arrays."""

    def __init__(  # noqa: PLR0913 -- keyword inputs: the reader's collaborators
        self,
        *,
        path: str,
        files: DatasetFiles,
        layout: BatchLayout,
        image: str | None,
        transform: Transform | None,
        decoder: SampleDecoder | None,
        allocate: Allocate,
        pad_value: float,
    ) -> None:
        self.path, self.files, self.layout = path, files, layout
        self.image, self.transform, self.decoder = image, transform, decoder
        self.allocate, self.pad_value = allocate, pad_value

    # -- one sample -----------------------------------------------------------------------------

    def sample(self, window: Window, k: int) -> tuple[Any, ...]:
        """The `k`-th sample of `window`: `(image, label)`, or one value per field."""
        if self.decoder is None:
            return self._image(window, k, None), window.labels[k]
        values = self.decoder.decode(window.ids[k], self._members(window, k), window.draws[k])
        window.files[k].release()
        return tuple(values)

    def _image(self, window: Window, k: int, out: Image | None) -> Image:
        """Sample `k`'s image, decoded (into `out` when given) through the transform."""
        data = self._payload(window, k)
        try:
            if self.transform is None:
                image = decode(data)
            else:
                image = self.transform(data, window.draws[k], out)
        except ValueError as e:
            if not needs_name(e):
                raise
            raise self._decode_error(window.ids[k], e) from e
        window.files[k].release()
        return image

    def _payload(self, window: Window, k: int) -> Payload:
        """Sample `k`'s image bytes, from the byte range located for the window; a range past
        the shard's end gets the index's error, which names what is wrong."""
        file, offset, size = window.files[k], window.offsets[k], window.sizes[k]
        if offset + size > file.size:
            _, offset, size = self.files.index.locate(window.ids[k], self._field(), file.size)
        READ_COUNTS.bytes_read += size
        return file.read(offset, size)

    def _members(self, window: Window, k: int) -> PayloadOf:
        """Sample `k`'s member of a field, None when it is absent."""
        index, i, file = self.files.index, window.ids[k], window.files[k]

        def member(field: str) -> Payload | None:
            try:
                _, offset, size = index.locate(i, field, file.size)
            except AbsentFieldError:
                return None
            READ_COUNTS.bytes_read += size
            return file.read(offset, size)

        return member

    def _field(self) -> str:
        if self.image is None:  # never on the (image, label) path, which needs an image
            fields = tuple(c.name for c in self.layout.columns)
            raise MissingFieldError(f"{self.path}: no image (jpeg) field; fields are {fields}")
        return self.image

    def _decode_error(self, i: int, error: ValueError) -> FastpackError:
        return named_decode_error(member_name(self.path, self.files, i, self._field()), error)

    # -- a batch --------------------------------------------------------------------------------

    def batch(self, spans: Sequence[Span]) -> tuple[Any, ...]:
        """The samples of `spans`, in order, as one batch: `(images (B, H, W, 3) uint8, labels
        (B,) int64)`, or one value per field as `Dataset.__getitems__` lays them out."""
        if self.decoder is not None:
            return self._fields_batch(self.decoder, spans)
        labels = np.concatenate([s.window.labels[s.start : s.stop] for s in spans])
        if self.transform is None:
            return self._full_size_batch(spans), labels
        images = self.allocate((len(labels), *self.transform.output_shape, 3))
        row = 0
        for window, start, stop in spans:
            for k in range(start, stop):
                self._image(window, k, images[row])
                row += 1
        return images, labels

    def _full_size_batch(self, spans: Sequence[Span]) -> Image:
        """Images without a transform: decoded at full size, which must be the same for all."""
        samples = [(w, k) for w, start, stop in spans for k in range(start, stop)]
        rows = [w.ids[k] for w, k in samples]
        payloads = [self._payload(w, k) for w, k in samples]
        images = decode_same_size(
            payloads,
            rows,
            self.allocate,
            self.path,
            lambda k, e: self._decode_error(rows[k], e),
        )
        _release({id(w.files[k]): w.files[k] for w, k in samples}.values())
        return images

    def _fields_batch(self, decoder: SampleDecoder, spans: Sequence[Span]) -> tuple[Any, ...]:
        samples = [(w, k) for w, start, stop in spans for k in range(start, stop)]
        rows = [w.ids[k] for w, k in samples]
        members = {w.ids[k]: self._members(w, k) for w, k in samples}  # one index: one sample
        decoded = iter([w.files[k] for w, k in samples])  # decode_batch goes in row order
        columns = decoder.decode_batch(
            rows,
            members.__getitem__,
            [w.draws[k] for w, k in samples],
            self.allocate,
            lambda: next(decoded).release(),
        )
        return assemble_columns(self.layout, columns, rows, self.path, self.pad_value)


def _release(files: Iterable[ShardFile]) -> None:
    for file in files:
        file.release()


def sample_decoder(  # noqa: PLR0913 -- keyword inputs: what one sample's decode needs
    path: str,
    files: DatasetFiles,
    layout: BatchLayout,
    *,
    image: str | None,
    transform: Transform | None,
    drop_empty_boxes: bool,
) -> SampleDecoder:
    """The decoder of the fields of `layout`, naming members as the streaming reader does."""
    return SampleDecoder(
        files,
        layout,
        image=image,
        transform=transform,
        drop_empty_boxes=drop_empty_boxes,
        where=functools.partial(member_name, path, files),
    )
