"""`StreamingOptions` alone (checked once, when made or replaced), and a `StreamingDataset`'s
attributes read from its parts (`Delegated`)."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from fastpack.reader.streaming.dataset import StreamingDataset
from fastpack.reader.streaming.options import FetchOptions, StreamingOptions

from tests.reader.conftest import Built


def test_the_defaults_are_the_constructor_s() -> None:
    options = StreamingOptions()
    assert (options.seed, options.shuffle, options.shuffle_window) == (0, True, 4)
    assert (options.rank, options.world_size, options.io) == (0, 1, "auto")
    assert options.fetch == FetchOptions()
    assert options.ahead_limit == 8  # two windows ahead without a cache limit


@pytest.mark.parametrize(
    ("given", "ahead"),
    [
        ({}, 8),
        ({"cache_limit": 10**9}, 4),  # one window with a bounded cache
        ({"prefetch": 3}, 3),
        ({"prefetch": 0, "cache_limit": 10**9}, 0),
        ({"shuffle_window": 2}, 4),
    ],
)
def test_the_shards_fetched_ahead(given: dict[str, Any], ahead: int) -> None:
    assert StreamingOptions(**given).ahead_limit == ahead


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"seed": -1}, r"StreamingDataset seed=-1: expected >= 0"),
        ({"shuffle_window": 0}, r"StreamingDataset shuffle_window=0: expected >= 1"),
        ({"prefetch": -2}, r"StreamingDataset prefetch=-2: expected >= 0 or None"),
        ({"world_size": 0, "rank": 0}, r"StreamingDataset world_size=0: expected >= 1"),
        ({"world_size": 2, "rank": 2}, r"StreamingDataset rank=2: expected in \[0, 2\)"),
        ({"batch_size": 0}, r"StreamingDataset batch_size=0: expected >= 1 or None"),
        ({"io": "fast"}, r"io must be one of \('auto', 'mmap', 'pread'\), got 'fast'"),
    ],
)
def test_an_option_out_of_range_is_named(given: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        StreamingOptions(**given)


def test_replacing_an_option_checks_it_again() -> None:
    options = StreamingOptions(batch_size=8)
    assert dataclasses.replace(options, batch_size=2).batch_size == 2
    with pytest.raises(ValueError, match="batch_size=0"):
        dataclasses.replace(options, batch_size=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.batch_size = 2  # type: ignore[misc]


def test_numbers_become_plain_values() -> None:
    options = StreamingOptions(seed=np.int64(7), pad=1, pad_value=2, drop_empty_boxes=0)  # type: ignore[arg-type]
    assert type(options.seed) is int
    assert options.seed == 7
    assert options.pad is True
    assert options.drop_empty_boxes is False
    assert type(options.pad_value) is float
    assert options.pad_value == 2.0


@pytest.fixture
def built(build_dataset: Callable[..., Built]) -> Built:
    return build_dataset(classes=2, per_class=3, size=24)


def test_a_dataset_reads_its_options_and_where_it_is(built: Built) -> None:
    dataset = StreamingDataset(built.path, seed=np.int64(5), shuffle_window=2, prefetch=1)
    assert dataset.options.seed == dataset.seed == 5
    assert (dataset.shuffle_window, dataset.prefetch, dataset.ahead_limit) == (2, 1, 1)
    assert dataset.path == str(built.path) == dataset.site.path
    assert dataset.root == built.path
    assert dataset.manifest is dataset.site.manifest
    assert dataset.io == "mmap"
    assert dataset.field == "jpg"
    assert dataset.fields == ("jpg", "cls")


def test_setting_an_option_replaces_the_options_checked(built: Built) -> None:
    dataset = StreamingDataset(built.path)
    before = dataset.options
    dataset.batch_size = 3
    assert dataset.options.batch_size == 3
    assert before.batch_size is None
    assert dataset.options == dataclasses.replace(before, batch_size=3)
    with pytest.raises(ValueError, match=r"StreamingDataset batch_size=0: expected >= 1"):
        dataset.batch_size = 0
    assert dataset.batch_size == 3


def test_where_it_is_and_what_a_sample_is_are_fixed(built: Built, tmp_path: Any) -> None:
    dataset = StreamingDataset(built.path)
    with pytest.raises(AttributeError, match=r"StreamingDataset.root is fixed when it is made"):
        dataset.root = tmp_path
    with pytest.raises(AttributeError, match=r"StreamingDataset.fields is fixed"):
        dataset.fields = ("label",)
    assert dataset.root == built.path


def test_made_from_a_call_s_arguments() -> None:
    given = {"self": object(), "seed": 3, "rank": None, "fetch": None, "batch_size": 2}
    options = StreamingOptions.of(given, rank=1, world_size=2, fetch=FetchOptions(threads=3))
    assert (options.seed, options.batch_size) == (3, 2)
    assert (options.rank, options.world_size, options.fetch.threads) == (1, 2, 3)


def test_every_keyword_of_the_dataset_is_an_option() -> None:
    keywords = list(inspect.signature(StreamingDataset).parameters)
    assert keywords[0] == "path"
    assert keywords[1:] == [f.name for f in dataclasses.fields(StreamingOptions)]
    for name, parameter in list(inspect.signature(StreamingDataset).parameters.items())[1:]:
        default = StreamingOptions.__dataclass_fields__[name].default
        if name not in ("rank", "world_size", "fetch"):  # resolved when the dataset is made
            assert parameter.default == default, name
