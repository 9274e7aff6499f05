"""A loader's reading of fastpack's order, the part every loader over an `EpochBatchSampler`
shares (the torch DataLoader, DALI's feed, the next one): the iteration under way, where it has
reached (`state_dict`), and where the next one starts (`load_state_dict`). The loader counts the
batches it hands to the trainer in `Progress.yielded`; the rest is here."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from .sampler import EpochBatchSampler, EpochSource
from .state import Progress, make_state, read_state


@runtime_checkable
class OrderedSource(EpochSource, Protocol):
    """A dataset whose place in its order a loader saves and resumes (a `Dataset`, a `Mix`):
    `set_epoch`, and what its order reads (`order_identity`, which a state names)."""

    def set_epoch(self, epoch: int) -> None: ...

    def order_identity(self) -> dict[str, Any]: ...


class EpochReading:
    """The iterations of one loader over `sampler`'s dataset; `where` leads its errors."""

    def __init__(self, sampler: EpochBatchSampler, where: str) -> None:
        self.sampler, self.where = sampler, where
        self.progress: Progress | None = None  # the current (or last) iteration

    @property
    def source(self) -> OrderedSource:
        """The sampler's dataset, which a state needs to name and to set the epoch of."""
        source = self.sampler.dataset
        if not isinstance(source, OrderedSource):
            raise TypeError(
                f"{self.where}: a loader's state needs a dataset with set_epoch and "
                f"order_identity (a Dataset or a Mix), got {type(source).__name__}"
            )
        return source

    def begin(self) -> Progress:
        """Start an iteration over the dataset's epoch where the sampler says (a pending
        resume of that epoch, else 0): its batches, none handed out yet."""
        sampler = self.sampler
        self.progress = Progress(
            epoch=sampler.dataset.epoch,
            start=sampler.begin(),
            batches=len(sampler),
            batch_size=sampler.batch_size,
            world_size=sampler.world_size,
            length=len(sampler.epoch_order),
        )
        return self.progress

    def state_dict(self) -> dict[str, Any]:
        """The dataset's epoch and the position in its order that every rank has reached after
        the batches handed out so far (before any iteration of this epoch: where the next one
        starts), and what the order reads (`order.state`)."""
        progress, epoch = self.progress, self.source.epoch
        if progress is not None and progress.epoch == epoch:
            position = progress.position()
        else:
            position = self.sampler.start()
        return make_state(
            identity=self.source.order_identity(),
            seed=self.sampler.seed,
            shuffle=self.sampler.shuffle,
            epoch=epoch,
            position=position,
        )

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Set the dataset's epoch to `state`'s, and start the next iteration over it where the
        state says; a `LoaderStateError` (a ValueError) when the state was saved over another
        dataset, view, mix, seed or shuffle, or a field is missing, unknown, of another type or
        out of range (`order.state.state_schema`), before any of it is used."""
        epoch, position = read_state(
            state,
            identity=self.source.order_identity(),
            seed=self.sampler.seed,
            shuffle=self.sampler.shuffle,
            length=len(self.sampler.epoch_order),
            where=self.where,
        )
        self.source.set_epoch(epoch)
        self.sampler.resume_at(epoch, position)
        self.progress = None
