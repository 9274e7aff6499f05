"""torchdata's StatefulDataLoader over a fastpack Dataset and its EpochBatchSampler: a run
stopped mid-epoch resumes where it stopped, with workers or without."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from fastpack.reader import CenterCrop, Dataset, EpochBatchSampler
from torchdata.stateful_dataloader import StatefulDataLoader

from .conftest import SAMPLES


def _as_is(batch: Any) -> Any:
    return batch


def _loader(path: Path, workers: int) -> tuple[Dataset, StatefulDataLoader]:
    ds = Dataset(path, transform=CenterCrop(8))
    ds.set_epoch(1)
    sampler = EpochBatchSampler(ds, 9, seed=7)
    return ds, StatefulDataLoader(ds, batch_sampler=sampler, num_workers=workers, collate_fn=_as_is)


@pytest.mark.parametrize("workers", [0, 2])
def test_stateful_dataloader_resumes_mid_epoch(one_class_per_sample: Path, workers: int) -> None:
    _, whole = _loader(one_class_per_sample, workers)
    expected = [y.tolist() for _, y in whole]
    assert sorted(y for batch in expected for y in batch) == list(range(SAMPLES))

    _, first = _loader(one_class_per_sample, workers)
    it, seen = iter(first), []
    for _ in range(6):
        seen.append(next(it)[1].tolist())
    state = first.state_dict()
    del it, first

    _, second = _loader(one_class_per_sample, workers)
    second.load_state_dict(state)
    seen += [y.tolist() for _, y in second]
    assert seen == expected  # the same batches, in the same order
    assert Counter(y for batch in seen for y in batch) == Counter(range(SAMPLES))
