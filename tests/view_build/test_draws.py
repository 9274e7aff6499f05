"""The seeded draws of `fraction` and `split` (formats/SPEC.md section 8)."""

from __future__ import annotations

import numpy as np
import pytest

from fastpack.view_build.draws import draws, in_fraction, split_parts, threshold

M64 = 2**64 - 1
G = 0x9E3779B97F4A7C15


def mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def spec_draw(seed: int, stream: int, i: int) -> int:
    """`v(s, i)` exactly as SPEC section 8 writes it, in Python integers."""
    key = mix(mix((seed + G) & M64) ^ stream)
    return mix(key ^ ((i * G) & M64)) >> 11


@pytest.mark.parametrize("seed", [0, 1, 12345, 2**64 - 1])
def test_draws_follow_the_spec(seed: int) -> None:
    rows = np.array([0, 1, 2, 999, 10**9, 2**40 + 7], np.int64)
    for stream in (1, 2):
        got = draws(seed, stream, rows).tolist()
        assert got == [spec_draw(seed, stream, int(i)) for i in rows]
        assert all(0 <= v < 2**53 for v in got)


def test_fractions_nest_and_are_about_right() -> None:
    rows = np.arange(200_000, dtype=np.int64)
    kept = {f: in_fraction(7, rows, f) for f in (0.01, 0.1, 0.5, 0.9, 1.0)}
    assert kept[1.0].all()
    for small, large in ((0.01, 0.1), (0.1, 0.5), (0.5, 0.9)):
        assert not (kept[small] & ~kept[large]).any()
    for f, mask in kept.items():
        assert abs(mask.mean() - f) < 0.01
    assert not np.array_equal(in_fraction(8, rows, 0.5), kept[0.5])
    # a row's fate depends on the row alone, not on which rows are asked about
    assert np.array_equal(in_fraction(7, rows[::3], 0.5), kept[0.5][::3])


def test_split_parts_are_disjoint_and_cut_a_different_stream() -> None:
    rows = np.arange(100_000, dtype=np.int64)
    parts = split_parts(3, rows, [0.7, 0.2, 0.1])
    assert set(np.unique(parts).tolist()) == {0, 1, 2}
    assert np.allclose(np.bincount(parts) / len(rows), [0.7, 0.2, 0.1], atol=0.01)
    short = split_parts(3, rows, [0.5, 0.2])
    assert (short == 2).mean() == pytest.approx(0.3, abs=0.01)  # in no part
    assert not np.array_equal(short == 0, in_fraction(3, rows, 0.5))  # another stream


def test_threshold_is_exact() -> None:
    assert threshold(1.0) == 2**53
    assert threshold(0.5) == 2**52
    assert threshold(1e-300) == 1
    with pytest.raises(ValueError, match="seed -1"):
        draws(-1, 1, np.arange(3, dtype=np.int64))
