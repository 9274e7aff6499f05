"""A DALI pipeline's samples in fastpack's order: the `fn.external_source` callable that reads each
batch of an `EpochBatchSampler` from a `Dataset`, the order the torch loader reads.

Each call returns one batch of this rank: the encoded image of every sample (and the png bytes of
its mask fields) as 1-D uint8 arrays, zero-copy views of the shards (`Dataset.read_bytes`; DALI
copies them), and the samples' indices in the dataset, from which the loader takes their labels and
their other fields (`FedFields`) once DALI hands the batch back. The batches are one stream of
epochs (`order.stream.EpochStream`), so that DALI, which calls the source ahead of the trainer
(`prefetch_queue_depth`, from the thread that asks it for a batch), goes on into the next epoch's
first batches while the trainer takes this one's last; the loader cuts the stream into epochs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import AbsentFieldError, FieldValueError, ShardFormatError, decode_value
from fastpack.formats.field_codec import FieldCodec

from ..map_style.dataset import Dataset
from ..order.sampler import EpochBatch, EpochBatchSampler
from .fields import FieldBatch
from .options import FieldOutput

if TYPE_CHECKING:
    import torch

Members = list[npt.NDArray[np.uint8]]


class SampleFeed:
    """The external source of one rank's pipeline: `sampler`'s batches of `dataset`, each as
    `(images, indices, *masks)`, in the order of the batches `read` gives it."""

    def __init__(
        self, dataset: Dataset, sampler: EpochBatchSampler, field: str, masks: Sequence[str]
    ) -> None:
        self.dataset, self.sampler = dataset, sampler
        self.field, self.masks = field, tuple(masks)
        self._batches: Iterator[EpochBatch] = iter(())

    @property
    def outputs(self) -> int:
        """How many outputs each call returns."""
        return 2 + len(self.masks)

    def read(self, batches: Iterable[EpochBatch]) -> None:
        """Read `batches` from the next call on (the loader's stream of epochs: `EpochStream`);
        a call past their end raises StopIteration, which ends DALI's epoch."""
        self._batches = iter(batches)

    def __call__(self) -> tuple[Members | npt.NDArray[np.int64], ...]:
        batch = next(self._batches)  # StopIteration: the end of DALI's epoch
        images = [self._member(i, self.field) for i in batch]
        masks = [[self._member(i, m) for i in batch] for m in self.masks]
        return (images, np.asarray(batch, np.int64).reshape(-1, 1), *masks)

    def _member(self, i: int, field: str) -> npt.NDArray[np.uint8]:
        return np.frombuffer(self.dataset.read_bytes(i, field), np.uint8)


class FedFields:
    """The extra fields of batches fed by `SampleFeed`: masks as DALI decoded and cropped them,
    checked by `FieldBatch`; class fields and member bytes read from the dataset for the samples
    DALI returned (as the reader path returns them: fields.py)."""

    def __init__(
        self, dataset: Dataset, fields: Sequence[FieldOutput], codecs: Mapping[str, FieldCodec]
    ) -> None:
        self.dataset, self.fields = dataset, tuple(fields)
        self.codecs = {f.name: codecs.get(f.name) for f in self.fields}
        self._class = {f.name: dataset.manifest.schema[f.name] for f in fields if f.kind == "class"}

    def name(self, i: int) -> str:
        """How errors name sample `i`."""
        return f"{self.dataset.path}: sample {i} (key {self.dataset.key(i)})"

    def values(
        self, batch: Mapping[str, torch.Tensor], indices: list[int], device: Any
    ) -> dict[str, Any]:
        """Each field's values for the samples `indices` of DALI's `batch`."""
        import torch  # noqa: PLC0415 -- optional: torch

        names = [self.name(i) for i in indices]
        masks = [f for f in self.fields if f.kind == "mask"]
        out = FieldBatch(batch, len(indices), str(self.dataset.path), samples=names).masks(masks)
        for f in self.fields:
            if f.kind == "class":
                labels = np.array([self._class_value(i, f.name) for i in indices], np.int64)
                out[f.name] = torch.from_numpy(labels).to(device, non_blocking=True)
            elif f.kind == "bytes":
                out[f.name] = [self._member(i, f) for i in indices]
        return out

    def _plain(self, i: int, name: str) -> bytes | memoryview:
        codec = self.codecs[name]
        data = self.dataset.read_bytes(i, name)
        try:
            return data if codec is None else codec.decompress(data)
        except FieldValueError as e:
            raise FieldValueError(f"{self.name(i)}: member {name!r}: {e}") from e

    def _class_value(self, i: int, name: str) -> int:
        try:
            return int(decode_value(self._class[name], self._plain(i, name)))
        except FieldValueError as e:
            raise ShardFormatError(f"{self.name(i)}: member {name!r}: {e}") from e

    def _member(self, i: int, f: FieldOutput) -> torch.Tensor | None:
        import torch  # noqa: PLC0415 -- optional: torch

        try:
            plain = self._plain(i, f.name)
        except AbsentFieldError:
            if not f.optional:
                raise
            return None
        return torch.from_numpy(np.frombuffer(plain, np.uint8).copy())
