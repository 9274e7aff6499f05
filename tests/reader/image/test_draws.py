"""`sample_draws`: per-sample uniform numbers that depend on (seed, epoch, index) only."""

from __future__ import annotations

import numpy as np
import pytest
from fastpack.reader.image import sample_draws
from fastpack.reader.image.draws import iter_draws


def test_a_row_depends_only_on_seed_epoch_and_index() -> None:
    batch = sample_draws(7, 3, [5, 900, 12, 10_000_000], 23)
    assert batch.shape == (4, 23)
    assert batch.dtype == np.float64
    alone = sample_draws(7, 3, [12], 23)
    assert np.array_equal(batch[2], alone[0])  # batching and order change nothing
    assert np.array_equal(sample_draws(7, 3, [12], 5)[0], alone[0, :5])  # a prefix of the row
    others = [
        sample_draws(8, 3, [12], 23),
        sample_draws(7, 4, [12], 23),
        sample_draws(7, 3, [13], 23),
    ]
    for other in others:
        assert not np.isclose(other[0], alone[0]).any()


def test_draws_are_uniform_and_uncorrelated() -> None:
    draws = sample_draws(0, 0, range(20_000), 23)
    assert draws.min() >= 0.0
    assert draws.max() < 1.0
    counts = np.histogram(draws, bins=20, range=(0, 1))[0]
    expected = draws.size / 20
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 45  # 19 degrees of freedom: p < 0.001 above ~43.8
    # neighbouring samples and neighbouring positions are independent
    for a, b in [(draws[:-1, 0], draws[1:, 0]), (draws[:, 0], draws[:, 1])]:
        assert abs(np.corrcoef(a, b)[0, 1]) < 0.03
    epoch0, epoch1 = (sample_draws(0, e, range(1000), 1)[:, 0] for e in range(2))
    assert abs(np.corrcoef(epoch0, epoch1)[0, 1]) < 0.1


def test_negative_seed_or_epoch_is_refused() -> None:
    with pytest.raises(ValueError, match="seed and epoch must be >= 0, got -1 and 0"):
        sample_draws(-1, 0, [0], 3)
    with pytest.raises(ValueError, match="got 0 and -2"):
        sample_draws(0, -2, [0], 3)


def test_iter_draws_gives_each_sample_its_row_across_chunks() -> None:
    indices = [9, 3, 3, 700, 5, 12, 1]
    rows = list(iter_draws(4, 2, indices, 23, chunk=3))
    np.testing.assert_array_equal(np.array(rows), sample_draws(4, 2, indices, 23))
    assert list(iter_draws(4, 2, indices, 0)) == [None] * len(indices)
