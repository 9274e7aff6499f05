"""`Mix`: several map-style datasets (each with its view, if any) read as one, with fixed weights.

Each epoch of `epoch_size` samples gives source `s` exactly its quota (`epoch_size` split in
proportion to the weights, rounded by largest remainder), drawn through the source's own order
(its keyed permutation, or its balanced view's), which wraps around on its own: a small source
repeats, in a new permutation each time round; a large one is read on in the next epoch
(`order.epoch_order.QuotaOrder`). The order is a function of (seed, epoch, position), so a mix
resumes like one dataset, elastically (`FastpackLoader.state_dict`).

Sample `i` of the mix is sample `i - offset[s]` of source `s`, `offset` the sources' lengths
added up. Class names are unified by name (`classes`): every label, and every class_ids value,
is given in the unified table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from ..fields import BatchLayout
from ..map_style.dataset import BatchAllocator, Dataset
from ..order.epoch_order import EpochOrder, QuotaOrder, group_seed, quotas
from ..stats.recorder import records_batches
from ..streaming.dataset import StreamingDataset
from .batches import MixSources, merge_batches, remap_sample
from .classes import unify_classes


class Mix:
    """`sources`, pairs `(dataset, weight)` (`Dataset`s, each with its view if any; weights
    positive), read as one dataset of `epoch_size` samples per epoch in which each source has
    its exact share; `seed` keys the mix's order and each source's own (the sources' own
    seeds still key their random crops). Give it to `make_loader` as a `Dataset`:
    `make_loader(Mix([(a, 0.7), (b, 0.3)], epoch_size=100_000), batch_size=256)`; its `seed`
    and `shuffle` then must be left out or agree with the mix's.

    Every source must return the same fields with the same batch layout (the same transform
    output shape); a field one source lacks is named. Labels (and class_ids) are given in one
    class table, `classes`, the sources' names unified by name. Within a batch the samples are
    grouped by source (the batch is the same set as the order says, sorted by source), so that
    each source decodes its part straight into the batch's shared memory.
    """

    def __init__(
        self,
        sources: Sequence[tuple[Dataset, float]],
        *,
        epoch_size: int,
        seed: int = 0,
        shuffle: bool = True,
    ) -> None:
        if not sources:
            raise ValueError("Mix needs at least one (dataset, weight) source")
        for dataset, _ in sources:
            if isinstance(cast(object, dataset), StreamingDataset):
                raise TypeError(
                    f"{dataset.path}: Mix reads map-style Datasets; a StreamingDataset's order "
                    "is its own shard windows. Fetch the dataset (fastpack.reader."
                    "fetch_dataset) and mix Dataset(path) instead"
                )
            if not isinstance(dataset, Dataset):
                raise TypeError(f"Mix sources are (Dataset, weight) pairs, got {dataset!r}")
        if epoch_size < 1:
            raise ValueError(f"epoch_size must be at least 1, got {epoch_size}")
        if seed < 0:
            raise ValueError(f"seed must be >= 0, got {seed}")
        self.datasets = [d for d, _ in sources]
        self.weights = [float(w) for _, w in sources]
        self.quota = quotas(self.weights, epoch_size)  # raises on weights that are not > 0
        for dataset, q in zip(self.datasets, self.quota, strict=True):
            if q > 0 and len(dataset) == 0:
                raise ValueError(f"{dataset.path}: a mix source without samples")
        self.epoch_size, self.seed, self.shuffle = int(epoch_size), int(seed), bool(shuffle)
        self.epoch = 0
        self.batch_allocator: BatchAllocator | None = None
        self.offsets = np.cumsum([0, *(len(d) for d in self.datasets)]).astype(np.int64)
        self.layout = check_layouts(self.datasets)
        self.classes, self.class_maps = unify_classes([d.classes for d in self.datasets])
        self._sources = MixSources(self.datasets, self.layout.columns, self.class_maps)

    def __repr__(self) -> str:
        parts = ", ".join(f"({d!r}, {w})" for d, w in zip(self.datasets, self.weights, strict=True))
        return f"Mix([{parts}], epoch_size={self.epoch_size}, seed={self.seed})"

    # -- what make_loader reads -------------------------------------------------------------------

    def __len__(self) -> int:
        return self.epoch_size

    @property
    def path(self) -> str:
        return "Mix(" + ", ".join(str(d.path) for d in self.datasets) + ")"

    @property
    def io(self) -> str:
        """`pread` when any source reads that way (the sampler then tags batches ahead)."""
        return "pread" if any(d.io == "pread" for d in self.datasets) else "mmap"

    @property
    def image_label(self) -> bool:
        return self.layout.image_label

    @property
    def fields(self) -> tuple[str, ...]:
        return self.datasets[0].fields

    def set_epoch(self, epoch: int) -> None:
        if epoch < 0:
            raise ValueError(f"epoch must be >= 0, got {epoch}")
        self.epoch = int(epoch)
        for dataset in self.datasets:
            dataset.set_epoch(epoch)

    def epoch_order(self, seed: int, shuffle: bool) -> EpochOrder:
        """The mix's order (see the module docstring); `seed` and `shuffle` must be the mix's."""
        if seed != self.seed or shuffle != self.shuffle:
            raise ValueError(
                f"{self.path}: the loader's seed={seed}, shuffle={shuffle} differ from the "
                f"mix's seed={self.seed}, shuffle={self.shuffle}: leave them out of make_loader "
                "or give the same values"
            )
        groups = [
            (d.epoch_order(group_seed(self.seed, s), self.shuffle), int(self.offsets[s]))
            for s, d in enumerate(self.datasets)
        ]
        return QuotaOrder(groups, self.quota, self.seed, shuffle=self.shuffle)

    def order_identity(self) -> dict[str, Any]:
        return {
            "mix": [
                {"source": d.order_identity(), "weight": w}
                for d, w in zip(self.datasets, self.weights, strict=True)
            ],
            "epoch_size": self.epoch_size,
        }

    # -- reading ----------------------------------------------------------------------------------

    def source_of(
        self, indices: Sequence[int]
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """The source of each mix sample and its index there."""
        ids = np.asarray(indices, np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= self.offsets[-1]):
            raise IndexError(f"{self.path}: samples must be in [0, {int(self.offsets[-1])})")
        source = np.searchsorted(self.offsets, ids, side="right") - 1
        return source, ids - self.offsets[source]

    def __getitem__(self, i: int) -> tuple[Any, ...]:
        """Mix sample `i`, as its source gives it, labels in the unified class table."""
        source, local = self.source_of([i])
        s = int(source[0])
        return remap_sample(self._sources, s, self.datasets[s][int(local[0])])

    @records_batches  # one batch for loader.stats(), its sources' parts inside it
    def __getitems__(self, indices: Sequence[int]) -> tuple[Any, ...]:
        """A batch of mix samples, grouped by source, each source's part decoded by that
        source into the batch's arrays; labels in the unified class table."""
        source, local = self.source_of(indices)
        epoch = int(getattr(indices, "epoch", self.epoch))
        parts = []
        for s in np.unique(source).tolist():
            parts.append((int(s), local[source == s].tolist()))
        return merge_batches(self._sources, parts, epoch, self.batch_allocator)


def check_layouts(datasets: Sequence[Dataset]) -> BatchLayout:
    """The batch layout the sources share; a ValueError naming a field a source lacks, or one
    whose kind or shape differs."""
    first = datasets[0]
    for other in datasets[1:]:
        missing = [f for f in first.fields if f not in other.fields]
        extra = [f for f in other.fields if f not in first.fields]
        if missing or extra:
            lacks = f"lacks {missing}" if missing else f"has {extra} that {first.path} lacks"
            raise ValueError(
                f"{other.path}: mix sources must return the same fields; it {lacks} (fields "
                f"{list(other.fields)} against {list(first.fields)} of {first.path})"
            )
        for a, b in zip(first.layout.columns, other.layout.columns, strict=True):
            same = (a.name, a.kind, a.shape, a.spec.type) == (b.name, b.kind, b.shape, b.spec.type)
            if not same:
                raise ValueError(
                    f"{other.path}: field {b.name!r} is a {b.spec.type} batched as {b.kind} "
                    f"{b.shape}; in {first.path} a {a.spec.type} batched as {a.kind} {a.shape}"
                    " (mix sources need the same schema and transform output shape)"
                )
    return first.layout
