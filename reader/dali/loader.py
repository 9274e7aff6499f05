"""`DaliLoader`: one rank's batches from a DALI pipeline, epoch after epoch, over DALI's own
reader or over the feed of a `Dataset` in fastpack's order (make.py says why both, and makes
it; `make_dali_loader`). Over the feed it shares its order and its state with every loader of
fastpack's order (reader/order/: `EpochBatchSampler`, `EpochReading`).

Sharding and epoch length. Over a path, rank `r` of `n` reads DALI shard `r` of `n` (samples
are split over all shard files concatenated); over a `Dataset`, every `n`-th position of the
epoch's order from `r` (`EpochBatchSampler`). `r` and `n` come from the arguments (`rank`,
`world_size`), else from torch.distributed, else from RANK and WORLD_SIZE. Every rank yields the
same number of batches per epoch, so DDP never waits on a rank that ran out:

- `drop_last=False`: each rank yields `ceil(N / n)` samples per epoch, in
  `ceil(ceil(N / n) / batch_size)` batches whose last one may be partial. When `n` does not
  divide `N`, a rank whose share is one sample short repeats a sample once (DALI's
  `pad_last_batch`: its last; the sampler: the order's first). Across ranks every sample is
  seen exactly once per epoch, plus those repeats. A resumed epoch counts what is left of it.
- `drop_last=True`: each rank yields `floor(floor(N / n) / batch_size)` full batches; the rest
  of its share is skipped that epoch.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from fastpack.formats.field_codec import FieldCodec

from ..closing import ClosesOnExit
from ..order.reading import EpochReading
from ..order.sampler import EpochSource
from ..order.state import Progress
from ..order.stream import EpochStream
from ..stats import LoaderMeter, LoaderStats
from .feed import FedFields, SampleFeed
from .fields import SAMPLE_INDEX, FieldBatch
from .iterator import dali_iterator, read_error
from .labels import parse_labels, record_labels
from .options import LABEL_FIELD, PipelineOptions

if TYPE_CHECKING:
    import torch

# What a loader yields: (images, labels), or (images, labels, fields) when it reads fields.
Batch = tuple[Any, ...]


def _samples_per_epoch(num_samples: int, num_shards: int, batch_size: int, drop_last: bool) -> int:
    """What one rank yields per epoch (the module docstring's last-batch policy)."""
    if drop_last:
        return num_samples // num_shards // batch_size * batch_size
    return -(-num_samples // num_shards)


class DaliLoader(ClosesOnExit):
    """One rank's `(images, labels)` batches, epoch after epoch: `for images, labels in loader`;
    with extra fields `(images, labels, fields)` (`options.fields`).

    `images`: uint8 (B, size, size, 3) CPU tensor with `device="cpu"`; float32 (B, 3, size, size)
    normalized with `mean`/`std` on the GPU with `DaliOptions(device="gpu")`. `labels`: int64
    (B,) parsed from
    the samples' `cls` members (record shards: `image/class/label`; fed samples: the index's),
    on the images' device.
    `fields`: each extra field's values by name (fields.py); `codecs` decompress its zstd
    fields. `len(loader)` is the number of batches per epoch, the same on every rank. DALI's
    own errors on damaged files are raised as `DaliReadError`, after which the loader is
    closed. Made by `make_dali_loader`.

    Over DALI's reader (`feed` None) each `iter()` starts a new epoch; DALI cannot rewind, so
    an epoch left unfinished is first read to its end. DALI counts epochs itself: when
    `epoch_source` is set, an epoch it names other than 0 must be the one DALI starts, else
    ValueError.

    Over a `feed` (fastpack's order, feed.py) each `iter()` reads the dataset's epoch
    (`set_epoch`) in the order of its sampler, the torch loader's: from the start, or where
    `load_state_dict` says; `len(loader)` is the number of batches of that iteration. The feed
    goes on into the next epoch's batches (`order.stream`), so that DALI decodes its first
    batches while the trainer takes this epoch's last ones; an iteration over another epoch or
    position, or after one left unfinished, drops the pipeline that prefetched them and starts
    a new one. `state_dict()` and `load_state_dict()` take the torch loader's state
    (`fastpack.reader.order.state`).
    """

    def __init__(
        self,
        options: PipelineOptions,
        *,
        num_samples: int,
        source: str,
        codecs: Mapping[str, FieldCodec] | None = None,
        feed: SampleFeed | None = None,
    ) -> None:
        self.options = options
        self.codecs = dict(codecs or {})
        self.num_samples = num_samples
        self.feed = feed
        self.epoch_source: EpochSource | None = None
        # `make_loader` sets the Dataset's fields: batches then come as one value per field in
        # this order (the image field's images, the label field's labels, the others' values)
        self.order: tuple[str, ...] | None = None
        self._source = source
        self._iterator: Any = dali_iterator(options, source, feed)
        self._in_epoch = False  # over DALI's reader: an epoch begun and not read to its end
        self._epochs_started = 0
        # the fed iterations: the current one's batches handed out, the state
        self._order = None if feed is None else EpochReading(feed.sampler, source)
        # the fed batches of successive epochs, which DALI prefetches across an epoch's end
        self._stream = None if feed is None else EpochStream(feed.sampler)
        self._fed = False  # the pipeline reads the stream: it may hold batches prefetched
        self._fed_fields = None
        self._meter = LoaderMeter(None, None)  # the trainer's side: DALI reports no stages
        if feed is not None:
            self._labels_of = np.asarray(feed.dataset.labels)
            if options.fields:
                self._fed_fields = FedFields(feed.dataset, options.fields, self.codecs)

    @property
    def samples_per_epoch(self) -> int:
        """The samples this rank yields per epoch (fed: in the next or current iteration)."""
        if self.feed is not None:
            return self.feed.sampler.samples_per_rank()
        o = self.options
        return _samples_per_epoch(self.num_samples, o.num_shards, o.batch_size, o.drop_last)

    @property
    def batch_size(self) -> int:
        return self.options.batch_size

    @property
    def rank(self) -> int:
        """This loader's rank (DALI's shard), of `world_size`."""
        return self.options.shard_id

    @property
    def world_size(self) -> int:
        return self.options.num_shards

    def __len__(self) -> int:
        if self.feed is not None:
            return len(self.feed.sampler)
        return math.ceil(self.samples_per_epoch / self.batch_size)

    def __iter__(self) -> Iterator[Batch]:
        if self._iterator is None:
            raise ValueError(f"{self._source}: this DALI loader is closed")
        if self.feed is not None and self._stream is not None:
            progress = self._begin(self.feed, self._stream)
            return self._meter.watch(self._fed_epoch(progress, self._stream))
        if self._in_epoch:
            while self._next() is not None:
                pass
        self._check_epoch(self._epochs_started)
        self._epochs_started += 1
        self._in_epoch = True
        return self._meter.watch(self._epoch())

    def stats(self) -> LoaderStats:
        """What the loader did since the previous call (the first: since the first batch was
        asked for): the trainer's wait, its batches and samples, and a verdict. DALI's pipeline
        reports no per-thread or per-stage times and no byte counts: `workers` is empty and
        the byte and shard counts are None."""
        return self._meter.stats()

    def _check_epoch(self, starting: int) -> None:
        wanted = 0 if self.epoch_source is None else self.epoch_source.epoch
        if wanted not in (0, starting):
            raise ValueError(
                f"{self._source}: the dataset is at epoch {wanted} (set_epoch) but DALI is "
                f"starting its epoch {starting}: DALI counts epochs itself, one per pass over "
                "the loader from 0, and cannot start at another"
            )

    def _begin(self, feed: SampleFeed, stream: EpochStream) -> Progress:
        """Start an iteration over the feed. The feed is one stream of epochs (`EpochStream`):
        this epoch from where the iteration starts, then the next ones from their start, so
        that DALI's prefetch runs on into the next epoch while the trainer takes this one's last
        batches. An iteration over the epoch the stream went on with (the previous one read to
        its end, and this one the next from its start) takes the batches DALI prefetched; any
        other restarts the stream, in a new pipeline if the current one has read from it."""
        progress = self._reading("an iteration").begin()
        if progress.batches == 0:  # nothing to read: DALI is not asked
            return progress
        if not (self._fed and stream.continues(progress.epoch, progress.start)):
            if self._fed:
                self._rebuild()  # drops the batches the pipeline prefetched
            stream.restart(progress.epoch, progress.start)
            feed.read(stream)
            self._fed = True
        return progress

    def _rebuild(self) -> None:
        """Drop the pipeline and the batches it prefetched; build a new one."""
        self._iterator = None
        self._iterator = dali_iterator(self.options, self._source, self.feed)
        self._in_epoch = self._fed = False

    def _fed_epoch(self, progress: Progress, stream: EpochStream) -> Iterator[Batch]:
        import torch  # noqa: PLC0415 -- optional: torch

        if progress.batches == 0:
            return
        for batch in stream.view(iter(self._next, None), progress.epoch, progress.batches):
            images = batch["images"]
            indices: list[int] = batch[SAMPLE_INDEX][:, 0].tolist()
            labels = torch.from_numpy(self._labels_of[indices])
            labels_on = labels.to(images.device, non_blocking=True)
            values = None
            if self._fed_fields is not None:
                values = self._fed_fields.values(batch, indices, images.device)
            progress.yielded += 1
            yield self._assemble(images, labels_on, values)

    def _assemble(self, images: Any, labels: Any, values: dict[str, Any] | None) -> Batch:
        """A batch as the loader yields it (class docstring; `order`: the Dataset's fields)."""
        if values is None:
            return images, labels
        if self.order is None:
            return images, labels, values
        values[self.options.field] = images
        values[self.options.label] = labels
        return tuple(values[f] for f in self.order)

    def state_dict(self) -> dict[str, Any]:
        """Where the current epoch has been read to, as the torch loader's `state_dict`: its
        epoch and the position in its order that every rank has reached after the batches
        handed to the trainer so far (not those DALI prefetched), and what the order reads."""
        return self._reading("state_dict").state_dict()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Resume from a `state_dict()` of this loader or of the torch loader, saved with any
        ranks, threads or workers and batch size: set the dataset's epoch to the state's, and
        start the next iteration there. Batches DALI prefetched are dropped, unless the state
        is where the loader's stream of epochs went on (the start of the epoch after one read to
        its end). Refused
        (`LoaderStateError`, a ValueError) when the state was saved over another dataset, view,
        seed or shuffle, or when a field is missing, unknown, of another type or out of range
        (`order.state.state_schema`), before any of it is used."""
        self._reading("load_state_dict").load_state_dict(state)
        # the next iteration restarts the stream (and the pipeline) unless the state is where the
        # stream went on (the start of the epoch after the one read to its end): `_begin`

    def _reading(self, what: str) -> EpochReading:
        if self._order is None:
            raise ValueError(
                f"{self._source}: {what} needs fastpack's order: make the loader over a Dataset "
                "(make_loader(dataset, loader='dali') or make_dali_loader(dataset)); DALI's "
                "own reader cannot start mid-epoch"
            )
        return self._order

    def _next(self) -> dict[str, torch.Tensor] | None:
        """The next DALI batch of the epoch, or None at its end (`next()`, not `iter()`, which
        would ask DALI for a reset)."""
        try:
            batch: dict[str, torch.Tensor] = next(self._iterator)[0]
        except StopIteration:
            self._in_epoch = False
            if self._stream is not None:  # DALI ended its epoch: the next iteration rebuilds
                self._stream.expected = None
            return None
        except RuntimeError as e:
            self.close()  # DALI's pipeline is no longer valid
            raise read_error(self._source, e) from e
        return batch

    def _epoch(self) -> Iterator[Batch]:
        import torch  # noqa: PLC0415 -- optional: torch

        left, fields = self.samples_per_epoch, self.options.fields
        while (batch := self._next()) is not None:
            take = min(left, self.batch_size)
            left -= take
            images = batch["images"][:take]
            labels = self._labels(batch[LABEL_FIELD][:take].numpy())
            labels_on = torch.from_numpy(labels).to(images.device, non_blocking=True)
            if not fields:
                yield images, labels_on
                continue
            values = FieldBatch(batch, take, self._source, self.options.records).values(
                fields, self.codecs, images.device
            )
            yield self._assemble(images, labels_on, values)

    def _labels(self, batch: Any) -> Any:
        """The int64 (B,) labels of a batch's label output."""
        if self.options.records:
            return record_labels(batch, self._source)
        return parse_labels(batch, self._source)

    def close(self) -> None:
        """Release the pipeline (its threads and buffers)."""
        self._iterator = None
