"""Where one stream of a `StreamingDataset` resumes, and how far it has read (`StreamResume`).

Two kinds of resume reach a stream: a stream's own state (`StreamingDataset.load_state_dict`,
what torchdata's `StatefulDataLoader` restores per worker: the same stream resumes at the
position it saved), and an epoch's progress over any layout (`StreamingDataset.resume`, from a
`StreamingLoader`'s state: what its segments left of the epoch is split over this layout,
`elastic`). The next iteration takes what is pending; its `Cursor` counts the samples it hands
out, which is what `state_dict()` saves.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import LoaderStateError
from .elastic import EpochProgress
from .plan import Stream
from .stream_state import StreamState, read_state


@dataclass
class Cursor:
    """An iteration of `stream`: `position` samples of its epoch handed out (counted before each
    is yielded), after the segments of `resumed` (None: from the epoch's start)."""

    stream: Stream
    position: int
    resumed: EpochProgress | None


class StreamResume:
    """The resume pending for the next iteration of one stream of the dataset at `where` (of
    which it reads version `version`), and the cursor of the current (or last) iteration.
    Copied (or pickled) with its dataset, it carries the numbers only."""

    def __init__(self, where: str, version: int = 1) -> None:
        self.where, self.version = where, version
        self.cursor: Cursor | None = None
        self._saved: tuple[Stream, int] | None = None  # a stream's state, loaded
        self._progress: EpochProgress | None = None  # an epoch to resume

    def read(self, state: Mapping[str, Any], seed: int) -> StreamState:
        """A stream's saved `state`, every field checked (`stream_state`), its seed `seed` and
        its dataset version this one's: a `LoaderStateError` names the field that is not."""
        saved = read_state(state, where=self.where)
        if saved.dataset_version != self.version:
            raise LoaderStateError(
                f"{self.where}: the StreamingDataset state was saved on version "
                f"{saved.dataset_version} of this dataset, this dataset reads version "
                f"{self.version}: resume it with StreamingDataset(path, "
                f"version={saved.dataset_version})"
            )
        if saved.seed != seed:
            raise LoaderStateError(
                f"{self.where}: StreamingDataset state saved with seed {saved.seed}, this "
                f"dataset has seed {seed}"
            )
        return saved

    def load(self, saved: StreamState) -> None:
        """Make the next iteration start after the samples `saved` counts."""
        self._saved = (saved.stream, saved.position)
        self._progress = saved.progress

    def resume(self, progress: EpochProgress | None) -> None:
        """Make the next iteration over `progress.epoch` read what its segments left (None:
        drop the resume pending)."""
        for segment in () if progress is None else progress.segments:
            segment.check()
        self._progress, self._saved = progress, None

    def begin(self, stream: Stream, epoch: int) -> Cursor:
        """The cursor of an iteration of `stream` over `epoch`, which takes the resume pending:
        a ValueError when a stream's state was saved by another stream."""
        start = 0
        if self._saved is not None:
            (saved, start), self._saved = self._saved, None
            if saved != stream:
                raise ValueError(
                    f"{self.where}: state saved by {saved.describe()}, resumed by "
                    f"{stream.describe()}: resume with the same world size and worker count"
                )
        progress, self._progress = self._progress, None
        if progress is not None and (progress.epoch != epoch or not progress.segments):
            progress = None
        self.cursor = Cursor(stream, start, progress)
        return self.cursor

    def state(self, *, epoch: int, seed: int, stream: Stream) -> StreamState:
        """The progress of the stream in `epoch`: the pending resume, else the current (or
        last) iteration's, else none of `stream` (the calling process's)."""
        position, progress, cursor = 0, None, self.cursor
        if cursor is not None:
            stream, position, progress = cursor.stream, cursor.position, cursor.resumed
        if self._saved is not None:
            (stream, position), progress = self._saved, self._progress
        if progress is None:
            progress = EpochProgress(epoch=epoch, segments=(), resident_budget=None)
        return StreamState(
            epoch=epoch,
            position=position,
            stream=stream,
            seed=seed,
            progress=progress,
            dataset_version=self.version,
        )

    def __copy__(self) -> StreamResume:
        copied = StreamResume.__new__(StreamResume)
        copied.__dict__.update(self.__dict__)
        copied.cursor = copy.copy(self.cursor)  # a snapshot: the iteration goes on counting
        return copied
