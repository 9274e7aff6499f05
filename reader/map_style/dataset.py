"""`Dataset`: map-style random access to a fastpack dataset, torch-free.

The constructor opens the manifest and the memory-mapped index at once, to fail early, and keeps
the number of the dataset version it opened; a pickled copy carries configuration only (path,
version, transform, seed, epoch) and opens that version again on first use in the process that
unpickles it, even when the dataset has grown a version since. Forked workers share the parent's
maps. Shards are mapped on demand. Nothing is kept per sample: a worker's private memory does not
grow with the dataset. `close()` (or leaving a `with` block, or the dataset being
garbage-collected) closes the shard files this process opened and drops its index map.

The image and label pair takes the fast path of `(images, labels)` batches; any other choice of
`fields` goes through `fields.SampleDecoder` and the batch rules of `fields.layout`.

What a process opens, and where the members of a sample lie: `opened`. How the image and label
pair decodes: `image_label`.
"""

from __future__ import annotations

import functools
import operator
import os
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import AbsentFieldError, DatasetNotFoundError, Manifest
from fastpack.storage import is_url

from ..closing import ClosesOnExit
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
from ..fields.sample import PayloadOf
from ..image.budget import resolve_budget, transform_budget
from ..image.decode import Image
from ..image.transforms import Transform
from ..order.balance import balanced_order
from ..order.epoch_order import EpochOrder, PermutedOrder
from ..order.identity import dataset_identity
from ..order.schema import INT64_MAX
from ..shard_files import IoChoice, IoMethod, check_io
from ..stats.recorder import records_batches
from ..versions import check_version
from ..views import ViewSpec
from .image_label import EncodedImages, ImageDecoding, draws
from .opened import Opened, member_name

BatchAllocator = Callable[[tuple[int, ...]], npt.NDArray[np.uint8]]


class Dataset(ClosesOnExit):
    """Samples of a fastpack dataset as `(image, label)`: an HxWx3 uint8 RGB array and an int64.

    Without a transform images are decoded at full size. With one (`RandomResizedCrop`,
    `CenterCrop`) every image has the transform's shape, and `__getitems__` decodes a whole batch
    into one preallocated array, which is what `make_loader` relies on.

    `fields` chooses what a sample is: a tuple of those fields, in that order (default: the
    image and the label, `("jpg", "cls")`; `field` names the image, default the schema's first
    jpeg field). Each value is decoded by its type: jpeg HxWx3 uint8 through the transform (every
    jpeg field asked, with the same draws), png HxW or HxWxC as stored (RGB order), class
    np.int64, class_ids an int64 array, ndarray the array, text str, json the parsed value, raw
    bytes. An absent member of an optional field is None. Geometry follows the image through the
    transform: a `mask` png is cropped, flipped and resized (nearest neighbour) to the output
    size, `boxes` are moved, scaled, flipped and clipped to it, and boxes left without area are
    dropped (`drop_empty_boxes=False` keeps them, with zero width or height, so that they stay
    paired with per-box values such as a class_ids field; a class_ids field is never changed).

    `__getitems__` returns one value per field (the table of `fastpack.reader.fields.layout`):
    one array for the fixed-shape fields (images and masks `(B, H, W[, 3])` uint8 with a
    transform, which also decodes them in place; class `(B,)` int64; ndarrays of a fixed schema
    shape `(B, *shape)`), a list for the others (text, json, raw, variable-length arrays such
    as boxes and class_ids, and every optional field, absent members None). With `pad=True`
    variable-length arrays come as `Padded(values (B, L, ...), lengths (B,) int64)`, padded
    with `pad_value` after each sample's rows, length -1 for an absent member.

    `io="mmap"` maps each shard and reads in place. `io="pread"` maps nothing: `__getitems__`
    reads the payloads of its batch with many `pread` calls at once (sorted, neighbours joined),
    and starts on the next batch that `make_loader`'s sampler will give this worker before it
    decodes this one (`map_style.range_reads`): a network file system's round trips then
    overlap each other and the decoding. `io="auto"` (default) is `pread` on a network or FUSE
    file system (NFS, Lustre, sshfs, ...) and `mmap` elsewhere, judged where the shards lie
    (adopted shards may lie on a mount the index is not on); `self.io` is the method chosen.

    Random transforms draw from `sample_draws(seed, epoch, [index], n)`. Call `set_epoch(e)`
    before each epoch. DataLoader workers copy the dataset when they start; with
    `persistent_workers=False` they restart every epoch and see the new epoch. With persistent
    workers use `make_loader`, whose batches carry the epoch to the workers; a plain DataLoader
    would keep the epoch the workers started with.

    `pixel_budget` bounds the memory of a decode: an image whose header declares more samples
    (width x height x components) is refused before anything is decoded, with a PixelBudgetError
    that names the sample (default: the transform's `pixel_budget`, else `DEFAULT_PIXEL_BUDGET`,
    2**28). A transform decodes within its own budget: give it the same one
    (`RandomResizedCrop(224, pixel_budget=...)`); a different one is a ValueError. Any other
    image that does not decode is a ShardFormatError naming the sample.

    `version` reads that version of a dataset grown by `fastpack append` (formats/SPEC.md
    section 11; default: the latest); a version the dataset does not have is a
    `VersionNotFoundError` naming the versions it has. `self.version` is the version read, which
    workers and every later open read too.

    Iterating yields every sample in order, and raises the error of a sample that cannot be read.
    `close()` closes the shard files and drops the index map this process opened, as leaving a
    `with Dataset(...) as ds:` block or garbage collection does; a closed dataset stays usable
    and opens them again on its next read, as a freshly unpickled copy does.
    """

    def __init__(  # noqa: PLR0913 -- public signature
        self,
        path: str | os.PathLike[str],
        *,
        transform: Transform | None = None,
        seed: int = 0,
        field: str | None = None,
        fields: Sequence[str] | None = None,
        pad: bool = False,
        pad_value: float = 0,
        drop_empty_boxes: bool = True,
        io: IoChoice = "auto",
        view: ViewSpec | None = None,
        pixel_budget: int | None = None,
        version: int | None = None,
    ) -> None:
        if seed < 0:
            raise ValueError(f"seed must be >= 0, got {seed}")
        if is_url(path):
            raise DatasetNotFoundError(
                f"{os.fspath(path)}: a URL; Dataset reads a directory on a local disk or a "
                "mount. Read a dataset at a URL with StreamingDataset(url, cache_dir=...), or "
                "copy it to a directory first with fetch_dataset(url, directory)"
            )
        self.path = Path(path)
        self._io: IoChoice = check_io(io)  # "auto": chosen where the shards lie, on opening
        self.transform = transform
        self.pixel_budget = resolve_budget(pixel_budget, transform)
        # a transform that does not check a budget of its own gets the header checked first
        self._check_before_transform = transform is not None and transform_budget(transform) is None
        self.seed = int(seed)
        self.pad, self.pad_value = bool(pad), float(pad_value)
        self.drop_empty_boxes = bool(drop_empty_boxes)
        self.epoch = 0
        self.view = view
        self.batch_allocator: BatchAllocator | None = None
        self._state: Opened | None = None
        self._finalizer: weakref.finalize[[], Dataset] | None = None
        self._version = check_version(version, str(path))  # None: the latest
        opened = self._opened()  # fail early on a malformed dataset
        files = opened.files
        # The method chosen; workers open with it rather than look again.
        self.io: IoMethod = opened.io
        self._io = self.io
        self._version = files.version  # every later open reads this version
        schema = files.manifest.schema
        where = str(self.path)
        self.field: str | None = image_field(schema, field, where)
        self.fields: tuple[str, ...] = choose_fields(schema, fields, self.field, where)
        layout = self.layout
        check_geometry(layout, transform, where)
        self._image_label = layout.image_label  # the fast path of (images, labels)

    # -- configuration and pickling -------------------------------------------------------------

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_state"] = state["_finalizer"] = None
        state["batch_allocator"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def __repr__(self) -> str:
        return (
            f"Dataset({str(self.path)!r}, version={self._version}, transform={self.transform!r}, "
            f"seed={self.seed}, "
            f"fields={self.fields!r}, epoch={self.epoch})"
        )

    def set_epoch(self, epoch: int) -> None:
        """Select the random draws of epoch `epoch` (see the class docstring): an integer in
        [0, 2**63 - 1], the int64 the draws are keyed by."""
        value = operator.index(epoch)  # an integer: a TypeError for a float or a string
        if not 0 <= value <= INT64_MAX:
            raise ValueError(f"epoch must be >= 0 and at most 2**63 - 1, got {epoch}")
        self.epoch = value

    def _opened(self) -> Opened:
        if self._state is None:
            state = self._state = Opened(self.path, self._io, self.view, self._version)
            # Holds the state, never the dataset: collecting the dataset closes its shard files.
            self._finalizer = weakref.finalize(self, state.close)
            self._finalizer.atexit = False  # the process's exit closes them anyway
        return self._state

    def close(self) -> None:
        """Close the shard files this process opened and drop its index map; a later read opens
        them again. Arrays handed out (`labels`, `read_bytes` views) stay valid."""
        finalizer, self._finalizer, self._state = self._finalizer, None, None
        if finalizer is not None:
            finalizer()  # runs `Opened.close` once, then lets go of the state

    # -- metadata -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._opened().count()

    @property
    def version(self) -> int:
        """The version of the dataset read (1 for a dataset never appended to)."""
        return self._opened().files.version

    def rows(self) -> npt.NDArray[np.int64] | None:
        """The dataset rows of the view read, in order (sample `i` is row `rows()[i]` of the
        index); None without a view."""
        return self._opened().rows

    def order_identity(self) -> dict[str, Any]:
        """What this dataset's samples are, as a loader's saved state names them: the manifest's
        digest, the dataset version and the view (name and digest): `order.identity`."""
        state = self._opened()
        return dataset_identity(state.files.manifest, state.view)

    def epoch_order(self, seed: int, shuffle: bool) -> EpochOrder:
        """The order of an epoch over this dataset's samples (`EpochBatchSampler`): a keyed
        permutation of them, or for a class-balanced view an equal share of the epoch per class,
        each class drawn through its own keyed permutation (`order.epoch_order.QuotaOrder`)."""
        state = self._opened()
        if state.view is None or state.view.balance is None:
            return PermutedOrder(len(self), seed, shuffle=shuffle)
        return balanced_order(self.labels, seed, shuffle=shuffle)

    @property
    def manifest(self) -> Manifest:
        return self._opened().files.manifest

    @property
    def classes(self) -> tuple[str, ...]:
        return self.manifest.classes

    @property
    def image_label(self) -> bool:
        """Whether a sample is exactly the image and the label, both required: the `(images,
        labels)` batches of the fast path (else one value per field)."""
        return self._image_label

    @property
    def layout(self) -> BatchLayout:
        """How the fields of a sample are decoded and batched (`fields.layout`)."""
        return plan_columns(
            self.manifest.schema,
            self.fields,
            image=self.field,
            transform=self.transform,
            pad=self.pad,
        )

    @property
    def labels(self) -> npt.NDArray[np.int64]:
        """Every sample's label: a read-only view of the memory-mapped index (with a view, a
        copy of its rows' labels)."""
        state = self._opened()
        if state.rows is not None:
            return state.labels[state.rows]
        return state.index.label  # type: ignore[return-value]

    def key(self, i: int) -> str:
        """The key of sample `i` (its member names in the shard are `<key>.<field>`)."""
        state = self._opened()
        return state.index.key(state.row(i))

    def source(self, i: int) -> str:
        """The path sample `i` was built from, relative to the build's source."""
        state = self._opened()
        return state.index.source(state.row(i))

    # -- reading --------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        """Every sample in order. Defined so that Python's sequence protocol, which ends an
        iteration at the first IndexError, is never used: an unreadable sample raises."""
        for i in range(len(self)):
            yield self[i]

    def read_bytes(self, i: int, field: str | None = None) -> memoryview | bytes:
        """The stored member of sample `i` in `field` (default: its image), as a zero-copy view
        into the shard; `AbsentFieldError` for an absent optional member. In a record dataset
        the label field's member is its value's varint (formats/SPEC.md section 4.2), which
        `DatasetFiles.codec(field).decode` reads like any other field's."""
        state = self._opened()
        name = self._image() if field is None else field
        if name not in state.index.fields:
            raise MissingFieldError(
                f"{self.path}: no field {name!r}; fields are {state.files.manifest.schema.names}"
            )
        return state.payload(state.row(i), name)

    def __getitem__(self, i: int) -> tuple[Any, ...]:
        """Sample `i`: a tuple of its `fields` (default `(image, label)`)."""
        if not self._image_label:
            return self._get_fields(i)
        state = self._opened()
        row = state.row(i)
        label = state.labels[row]  # before the release, which unmaps the index pages
        images = self._images()
        try:
            image = images.sample(state, row, self.epoch)
        finally:
            state.release(1)
        return image, label

    @records_batches  # the batch's time and bytes, for loader.stats()
    def __getitems__(self, indices: Sequence[int]) -> tuple[Any, ...]:
        """A batch as `(images (B, H, W, 3) uint8, labels (B,) int64)`, decoded into one array
        (other `fields`: one value per field, see the class docstring).

        Without a transform every image of the batch must have the same size (else ValueError).
        A batch from `make_loader` carries its epoch, which then overrides `self.epoch`.
        The batch arrays of images and masks come from `batch_allocator` when one is set
        (`make_loader`'s workers set one that allocates in shared memory; it is called once per
        such field, in field order, before any decode), else from `np.empty`.
        """
        if not self._image_label:
            return self._get_fields_batch(indices)
        state = self._opened()
        epoch = int(getattr(indices, "epoch", self.epoch))
        rows = [state.row(int(i)) for i in indices]
        labels = state.labels[rows]
        images = self._images()
        state.load(rows, indices, (images.image,))
        try:
            return images.batch(state, rows, epoch), labels
        finally:
            state.release(len(rows))

    @records_batches  # the batch's time and bytes, for loader.stats()
    def encoded_batch(self, indices: Sequence[int]) -> tuple[EncodedImages, npt.NDArray[np.int64]]:
        """A batch's images as stored, for a decoder elsewhere (the trainer's GPU), and their
        `(B,)` int64 labels: the `(images, labels)` path of `__getitems__` up to the decode,
        each image's header checked against `pixel_budget` (a PixelBudgetError or a
        ShardFormatError naming the sample), with the index rows that the samples' random draws
        are keyed by."""
        if not self._image_label:
            raise ValueError(
                f"{self.path}: encoded_batch reads (image, label) samples; this dataset reads "
                f"fields {self.fields}"
            )
        state = self._opened()
        rows = [state.row(int(i)) for i in indices]
        labels = state.labels[rows]
        images = self._images()
        state.load(rows, indices, (images.image,))
        try:
            return images.encoded(state, rows), labels
        finally:
            state.release(len(rows))

    def _images(self) -> ImageDecoding:
        """How the `(images, labels)` path decodes, with this dataset's settings of now."""
        return ImageDecoding(
            image=self._image(),
            transform=self.transform,
            seed=self.seed,
            pixel_budget=self.pixel_budget,
            check_header=self._check_before_transform,
            new_batch=self._new_batch,
            where=str(self.path),
        )

    def _new_batch(self, shape: tuple[int, ...]) -> Image:
        if self.batch_allocator is None:
            return np.empty(shape, np.uint8)
        return self.batch_allocator(shape)

    def _image(self) -> str:
        """The image field, which the `(images, labels)` path reads."""
        if self.field is None:
            raise MissingFieldError(f"{self.path}: no image (jpeg) field; fields are {self.fields}")
        return self.field

    # -- any other fields -----------------------------------------------------------------------

    def _decoder(self, state: Opened) -> SampleDecoder:
        """This process's decoder of the fields asked for (made again if the transform changed)."""
        decoder = state.decoder
        if decoder is None or decoder.transform is not self.transform:
            decoder = state.decoder = SampleDecoder(
                state.files,
                self.layout,
                image=self.field,
                transform=self.transform,
                drop_empty_boxes=self.drop_empty_boxes,
                where=functools.partial(member_name, state.files),
                pixel_budget=self.pixel_budget,
            )
        return decoder

    def _get_fields(self, i: int) -> tuple[Any, ...]:
        state = self._opened()
        row = state.row(i)
        decoder = self._decoder(state)
        try:
            row_draws = draws(self.transform, self.seed, [row], self.epoch)
            return tuple(decoder.decode(row, _members(state, row), row_draws[0]))
        finally:
            state.release(1)

    def _get_fields_batch(self, indices: Sequence[int]) -> tuple[Any, ...]:
        state = self._opened()
        epoch = int(getattr(indices, "epoch", self.epoch))
        rows = [state.row(int(i)) for i in indices]
        decoder = self._decoder(state)
        state.load(rows, indices, self.fields)
        try:
            columns = decoder.decode_batch(
                rows,
                lambda i: _members(state, i),
                draws(self.transform, self.seed, rows, epoch),
                self._new_batch,
                state.shards.release,
            )
        finally:
            state.release(len(rows))
        return assemble_columns(decoder.layout, columns, rows, str(self.path), self.pad_value)


def _members(state: Opened, row: int) -> PayloadOf:
    """Row `row`'s member of a field, None when it is absent."""

    def member(field: str) -> memoryview | bytes | None:
        try:
            return state.payload(row, field)
        except AbsentFieldError:
            return None

    return member
