"""One changed byte in any file of a dataset is found by the plain verify and named: a few
dozen seeded changes per kind of file (benchmarks/verify/flip_bench.py runs thousands)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fastpack.reader import verify_dataset

from benchmarks.verify._flips import KINDS, kind_files, make_datasets, plan_flips, run_flips

SEED = 31
RANDOM = 30  # random changes per kind
SWAPS = 6  # of each whitespace swap, in text files


@pytest.fixture(scope="module")
def roots(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    built = make_datasets(tmp_path_factory.mktemp("flips"))
    for root in built.values():
        assert verify_dataset(root).ok, verify_dataset(root).format()
    return built


@pytest.mark.parametrize("name", list(KINDS))
def test_every_changed_byte_is_found_and_named(roots: dict[str, Path], name: str) -> None:
    kind = KINDS[name]
    rng = np.random.default_rng([SEED, list(KINDS).index(name)])
    flips = plan_flips(roots, kind, rng, RANDOM, SWAPS)
    assert len(flips) > RANDOM if kind.text else len(flips) == RANDOM
    files = kind_files(roots, kind)
    outcome = run_flips(roots[kind.dataset], flips, len(files), 0)
    assert outcome.errors == 0
    assert outcome.missed == []
    assert outcome.named == len(flips)
    assert verify_dataset(roots[kind.dataset]).ok  # every change undone
