"""`CacheBudget` alone: the working set of a stream, the limit it must fit, and the bytes left to
each rank's resident shards."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastpack.formats import read_manifest
from fastpack.reader.streaming.budget import CacheBudget
from fastpack.reader.streaming.options import StreamingOptions

from tests.reader.conftest import Built


def budget(limit: int | None, *, ahead: int = 2, fixed: bool = False) -> CacheBudget:
    return CacheBudget(limit=limit, window=3, ahead=ahead, fixed=fixed, largest=100)


def test_made_from_the_options_and_the_manifest(build_dataset: Callable[..., Built]) -> None:
    manifest = read_manifest(build_dataset(classes=2, per_class=3, size=24).path / "fastpack.json")
    options = StreamingOptions(shuffle_window=2, cache_limit=10**6)
    cached = CacheBudget.of(options, manifest, cached=True)
    largest = max(s.bytes for s in manifest.shards)
    assert cached == CacheBudget(limit=10**6, window=2, ahead=2, fixed=False, largest=largest)
    assert CacheBudget.of(options, manifest, cached=False).limit is None  # read in place
    fixed = CacheBudget.of(StreamingOptions(prefetch=5), manifest, cached=True)
    assert (fixed.limit, fixed.ahead, fixed.fixed) == (None, 5, True)


def test_a_limit_below_one_working_set_is_refused() -> None:
    assert budget(None).working_shards == 5
    budget(500).check("ds")  # (3 + 2) x 100 fits exactly
    budget(None).check("ds")
    with pytest.raises(
        ValueError,
        match=r"^ds: cache_limit=499 bytes is below one stream's working set: \(shuffle_window "
        r"3 \+ prefetch 2\) x 100 bytes \(largest shard\) = 500$",
    ):
        budget(499).check("ds")


def test_what_is_left_is_resident(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    assert budget(None).resident_bytes(world=4, workers=2) is None
    assert budget(10_000).resident_bytes(world=4, workers=0) == 10_000 - 500  # one stream
    assert budget(10_000).resident_bytes(world=4, workers=3) == 10_000 - 3 * 500
    monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")  # two ranks share the node's cache
    assert budget(10_000).resident_bytes(world=4, workers=3) == 5_000 - 3 * 500
    assert budget(1_000).resident_bytes(world=4, workers=3) == 500 - 3 * 500  # none left


def test_the_depth_of_a_stream() -> None:
    chosen, fixed = budget(None, ahead=6).depth(), budget(None, ahead=6, fixed=True).depth()
    assert (chosen.window, chosen.limit, chosen.fixed) == (3, 6, False)
    assert chosen.depth == 3  # a window ahead until it has measured something
    assert fixed.depth == 6
