"""The one rank resolver that the sampler, the streaming dataset and DALI share."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastpack.reader import Dataset, EpochBatchSampler, StreamingDataset
from fastpack.reader.ranks import resolve_rank

from .conftest import Built


@pytest.fixture(autouse=True)
def _no_rank_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANK", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)


def test_arguments_then_environment_then_single_process(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_rank(None, None) == (0, 1)
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    assert resolve_rank(None, None) == (3, 4)
    assert resolve_rank(1, None) == (1, 4)
    assert resolve_rank(0, 2) == (0, 2)


@pytest.mark.parametrize("empty", ["", "  "])
def test_empty_variables_count_as_unset(monkeypatch: pytest.MonkeyPatch, empty: str) -> None:
    monkeypatch.setenv("RANK", empty)
    monkeypatch.setenv("WORLD_SIZE", empty)
    assert resolve_rank(None, None) == (0, 1)
    assert resolve_rank(None, 2) == (0, 2)


def test_bad_values_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    with pytest.raises(ValueError, match=r"rank must be in \[0, 2\), got 3"):
        resolve_rank(None, 2)
    with pytest.raises(ValueError, match="world size must be at least 1, got 0"):
        resolve_rank(0, 0)
    monkeypatch.setenv("RANK", "one")
    with pytest.raises(ValueError, match="RANK='one' is not an integer"):
        resolve_rank(None, None)


@pytest.mark.parametrize("rank_env", ["", "2"])
def test_every_reader_resolves_alike(
    monkeypatch: pytest.MonkeyPatch, rank_env: str, build_dataset: Callable[..., Built]
) -> None:
    """The sampler, the streaming dataset and DALI's options agree on (rank, world)."""

    monkeypatch.setenv("RANK", rank_env)
    monkeypatch.setenv("WORLD_SIZE", "3")
    expected = resolve_rank(None, None)
    root = build_dataset().path
    sampler = EpochBatchSampler(Dataset(root), 4)
    stream = StreamingDataset(root)
    assert (sampler.rank, sampler.world_size) == expected
    assert (stream.rank, stream.world_size) == expected
