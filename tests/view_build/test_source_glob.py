"""The vectorized glob answers as `fnmatch.fnmatchcase` does, string by string."""

from __future__ import annotations

import fnmatch

import numpy as np
import pytest
from fastpack.formats.string_table import pack_strings
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fastpack.view_build import source_glob
from fastpack.view_build.source_glob import glob_mask

# Characters that make globs interesting: separators, set syntax, wildcards, UTF-8.
TEXT = st.text(alphabet="ab/._-]![*?^\\\né€", max_size=10)
PATTERN = st.text(alphabet="ab/.*?[]!-^\\é", max_size=8)


def expected(strings: list[str], pattern: str) -> list[bool]:
    return [fnmatch.fnmatchcase(s, pattern) for s in strings]


@settings(max_examples=400, deadline=None)
@given(strings=st.lists(TEXT, max_size=25), pattern=PATTERN)
@example(strings=["a/b.jpg", "b.jpg", "a/", ""], pattern="*/*")
@example(strings=["é", "ab", "a"], pattern="?")
@example(strings=["é", "e", "]"], pattern="[!a]")
@example(strings=["[a", "a"], pattern="[a")
@example(strings=["a]", "]"], pattern="[]a]")
def test_matches_like_fnmatchcase(strings: list[str], pattern: str) -> None:
    blob, offsets = pack_strings(strings)
    assert glob_mask(blob, offsets, pattern).tolist() == expected(strings, pattern)


@settings(max_examples=60, deadline=None)
@given(strings=st.lists(TEXT, min_size=1, max_size=200), pattern=PATTERN)
def test_chunks_change_nothing(strings: list[str], pattern: str) -> None:
    blob, offsets = pack_strings(strings)
    whole = glob_mask(blob, offsets, pattern)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(source_glob, "CHUNK_BYTES", 7)
        assert glob_mask(blob, offsets, pattern).tolist() == whole.tolist()


def test_paths_of_an_image_folder() -> None:
    strings = [
        f"{c}/{i:03d}.{ext}" for c in ("cats", "dogs") for i in range(12) for ext in ("jpg", "png")
    ]
    blob, offsets = pack_strings(strings)
    for pattern in ("cats/*", "*.png", "*/00?.jpg", "dogs/01[0-1].*", "*s/*1*", "cats/000.jpg"):
        assert glob_mask(blob, offsets, pattern).tolist() == expected(strings, pattern), pattern


def test_a_table_window_of_a_larger_blob() -> None:
    """Offsets need not start at 0 (a shard's rows), nor end at the blob's end."""
    blob, offsets = pack_strings(["x", "cats/1", "dogs/2", "cats/3", "y"])
    window = offsets[1:4]
    assert glob_mask(blob, window, "cats/*").tolist() == [True, False]
    assert glob_mask(blob, np.zeros(1, np.uint64), "*").tolist() == []
