"""The mutators do what the fuzz tests count on: the corpus parses and writes back byte for byte,
a case depends on its seed alone, every mutation kind happens, and a state's verdict follows
its schema."""

from __future__ import annotations

import pickle
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import simplejpeg

from .cases import CaseMaker
from .file_mutators import CONST, INT, POSITION, StateSchema, must_refuse
from .jpeg_mutator import KINDS, JpegMutator, base_jpegs
from .jpeg_segments import FRAMES, SOS, parse, serialize
from .plan import plan


@pytest.mark.parametrize("name", sorted(base_jpegs()))
def test_the_corpus_decodes_and_parses_back_to_its_bytes(name: str) -> None:
    data = base_jpegs()[name]
    assert simplejpeg.decode_jpeg(data).ndim == 3
    segments = parse(data)
    assert serialize(segments) == data
    scans = sum(s.code == SOS for s in segments)
    progressive = any(s.code == 0xC2 for s in segments)
    assert scans > 1 if progressive else scans == 1
    assert sum(s.code in FRAMES for s in segments) == 1


def test_the_corpus_has_every_layout() -> None:
    names = set(base_jpegs())
    for part in ("baseline-444", "baseline-420", "baseline-grey", "progressive-420", "restart"):
        assert any(part in n for n in names), part
    assert any(b"\xff\xe1" in data for data in base_jpegs().values())  # EXIF APP1


def test_a_case_depends_on_its_seed_alone() -> None:
    first, second = JpegMutator(), JpegMutator()
    for number in range(50):
        a = first.case(np.random.default_rng([7, number]))
        b = second.case(np.random.default_rng([7, number]))
        assert (a.data, a.mutations) == (b.data, b.mutations)
    c = first.case(np.random.default_rng([8, 0]))
    assert c.data != first.case(np.random.default_rng([7, 0])).data or c.mutations == ()


def test_every_mutation_kind_happens_and_changes_the_bytes() -> None:
    mutator, seen, changed = JpegMutator(), Counter[str](), 0
    for number in range(3000):
        case = mutator.case(np.random.default_rng([1, number]))
        seen.update(m.split(":")[0] for m in case.mutations)
        changed += case.data != mutator.corpus[case.base]
    assert set(KINDS) <= set(seen), set(KINDS) - set(seen)
    assert min(seen.values()) >= 20, seen
    assert changed >= 0.9 * 3000


def test_the_same_case_for_the_same_target_seed_and_number(fuzz_templates: dict[str, Path]) -> None:
    maker = CaseMaker(fuzz_templates, ["state_map"])
    for target in ("window_c", "dataset", "index", "manifest", "view", "state_map"):
        a, b, c = (maker.make(target, 3, n) for n in (11, 11, 12))
        assert pickle.dumps(a.payload) == pickle.dumps(b.payload), target  # NaN != NaN
        assert a.description == b.description
        assert pickle.dumps(a.payload) != pickle.dumps(c.payload), target


def test_a_state_verdict_follows_its_schema() -> None:
    schema = StateSchema({"kind": CONST, "epoch": INT, "position": POSITION}, length=10)
    base = {"kind": "a", "epoch": 3, "position": 4}
    assert must_refuse(schema, base, dict(base)) is False
    assert must_refuse(schema, base, {**base, "epoch": 7, "position": 10}) is False
    for bad in (
        {**base, "epoch": "3"},
        {**base, "epoch": 3.0},
        {**base, "epoch": True},
        {**base, "epoch": -1},
        {**base, "position": 11},
        {**base, "position": 12.5},
        {**base, "kind": "b"},
        {"kind": "a", "epoch": 3},
        [base],
    ):
        assert must_refuse(schema, base, bad) is True, bad
    assert must_refuse(schema, base, {**base, "extra": 1}) is None
    assert must_refuse(schema, base, {**base, "epoch": 2**40}) is None


def test_the_plan_shares_out_exactly_the_cases_asked_for() -> None:
    for total in (1_000, 6_000, 20_000, 100_000):
        shares = plan(total)
        assert sum(shares.values()) == total
        assert shares["window_c"] > shares["state_map"] > 0  # by weight
