"""One window of a stream, located: its samples in reading order, each with its open shard file,
label, random draws and (when asked) the byte range of its image, found with one index lookup
per column for the whole window rather than one per sample."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from fastpack.formats import CorruptIndexError, DatasetFiles

from ..image.draws import sample_draws
from ..shard_files import ShardFile

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, kw_only=True, slots=True)
class Window:
    """The samples of one window, `k`-th in reading order: dataset index `ids[k]`, in
    `files[k]`, with label `labels[k]`, transform draws `draws[k]`, and its image at
    `offsets[k]`, `sizes[k]` bytes of its shard (empty lists when not located). `positions`:
    the stream's chunk positions of its shards, released when it has been read."""

    ids: list[int]
    labels: npt.NDArray[np.int64]
    files: list[ShardFile]
    draws: list[list[float]] | list[None]
    offsets: list[int]
    sizes: list[int]
    positions: range

    def __len__(self) -> int:
        return len(self.ids)


def locate_window(  # noqa: PLR0913 -- keyword inputs: a seeded window
    dataset: DatasetFiles,
    ids: IntArray,
    shard_files: Mapping[int, ShardFile],
    positions: range,
    *,
    image: str | None,
    seed: int,
    epoch: int,
    draws: int,
) -> Window:
    """The window of samples `ids` (in reading order), whose shards are open as `shard_files`
    (by shard number); `image`: the field whose byte ranges to look up (None: none); `draws`:
    the transform's number of draws per sample (0: none). A `CorruptIndexError` names the first
    sample that the index puts in a shard outside the window."""
    index = dataset.index
    shards = np.asarray(index.shard[ids], dtype=np.int64)
    known = np.isin(shards, np.fromiter(shard_files, np.int64, len(shard_files)))
    if not known.all():
        k = int(np.argmin(known))
        raise CorruptIndexError(
            f"{index.path}: sample {int(ids[k])} is in shard {int(shards[k])}, the manifest's "
            f"sample counts put it in shard {sorted(shard_files)}"
        )
    located: list[list[float]] | list[None] = (
        sample_draws(seed, epoch, ids, draws).tolist() if draws else [None] * len(ids)
    )
    return Window(
        ids=ids.tolist(),
        labels=np.asarray(index.label[ids], dtype=np.int64),
        files=[shard_files[s] for s in shards.tolist()],
        draws=located,
        offsets=[] if image is None else index.offsets(image)[ids].tolist(),
        sizes=[] if image is None else index.sizes(image)[ids].tolist(),
        positions=positions,
    )
