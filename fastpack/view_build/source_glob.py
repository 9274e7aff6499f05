"""Which strings of a string table match a glob, for every sample at once, as Python's
`fnmatch.fnmatchcase` would answer string by string.

A glob is cut at its stars into segments, each a sequence of byte tests (a literal byte, `?`, a
`[...]` set). A string matches when its first segment matches at its start, its last at its end,
and the others in order in between, each at its leftmost place (which is how a glob matches).
NumPy runs each test for all candidate strings at once; the middle segments are found anywhere
in the blob and then assigned to strings by a binary search. That takes a fraction of the time a
regular expression run string by string, or over the whole blob, takes
(benchmarks/startup/VIEWS.md).

A byte test is a character test for ASCII text only. Where the glob has `?` or a set, strings
with other bytes are matched again one by one with `fnmatch`'s regular expression.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

CHUNK_BYTES = 1 << 22  # blob bytes matched at once: bounds the arrays, keeps them in cache
SAMPLE = 256  # places where the pass rate of each test is measured, to order them
_ASCII_END = 128  # bytes from here on are not ASCII

Bools = npt.NDArray[np.bool_]
Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class _Test:
    """One byte of a segment: which byte values pass (`table`), and the one that does when
    the test is a literal."""

    table: Bools
    byte: int | None


Segment = tuple[_Test, ...]


@dataclass(frozen=True)
class Glob:
    """A glob cut at its stars; `ascii_exact`: whether a byte test is a character test for any
    UTF-8 text (no `?` or set), else for ASCII text only."""

    pattern: str
    segments: tuple[Segment, ...]
    starred: bool
    ascii_exact: bool


def _literal(byte: int) -> _Test:
    table = np.zeros(256, np.bool_)
    table[byte] = True
    return _Test(table, byte)


def _set_test(text: str) -> _Test:
    """`[...]` as `fnmatch` reads it, tested on each ASCII character."""
    regex = re.compile(fnmatch.translate(text))
    table = np.array([k < _ASCII_END and regex.match(chr(k)) is not None for k in range(256)])
    return _Test(table, None)


def _set_end(pattern: str, start: int) -> int:
    """Where the `[` at `start - 1` closes, as `fnmatch.translate` finds it; -1 if it does not
    (the `[` is then a literal)."""
    j = start
    if j < len(pattern) and pattern[j] == "!":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    return pattern.find("]", j)


def compile_glob(pattern: str) -> Glob:
    """The segments of `pattern` (`*`, `?`, `[seq]`, `[!seq]`, as `fnmatch`)."""
    segments: list[Segment] = []
    current: list[_Test] = []
    exact = True
    i = 0
    while i < len(pattern):
        c = pattern[i]
        i += 1
        if c == "*":
            segments.append(tuple(current))
            current = []
        elif c == "?":
            current.append(_Test(np.ones(256, np.bool_), None))
            exact = False
        elif c == "[" and (end := _set_end(pattern, i)) >= 0:
            current.append(_set_test(pattern[i - 1 : end + 1]))
            exact = False
            i = end + 1
        else:
            current.extend(_literal(b) for b in c.encode("utf-8"))
    segments.append(tuple(current))
    starred = len(segments) > 1
    middle = [s for s in segments[1:-1] if s]  # consecutive stars leave empty segments
    kept = [segments[0], *middle, segments[-1]] if starred else segments
    return Glob(pattern, tuple(kept), starred, exact)


def glob_mask(blob: npt.NDArray[np.uint8], offsets: npt.NDArray[np.uint64], pattern: str) -> Bools:
    """One bool per string of the table `(blob, offsets)` (offsets non-decreasing, the last
    at most `len(blob)`): whether it matches `pattern` as `fnmatch.fnmatchcase`."""
    glob = compile_glob(pattern)
    n = len(offsets) - 1
    mask = np.zeros(n, np.bool_)
    if n <= 0:
        return mask
    per_row = max(1, int(offsets[-1] - offsets[0]) // n)
    step = max(1024, CHUNK_BYTES // per_row)
    for first in range(0, n, step):
        stop = min(n, first + step)
        bounds = offsets[first : stop + 1].astype(np.int64)
        base = int(bounds[0])
        chunk = blob[base : int(bounds[-1])]
        bounds -= base
        mask[first:stop] = _match(chunk, bounds[:-1], bounds[1:], glob)
    return mask


def _match(blob: npt.NDArray[np.uint8], starts: Ints, ends: Ints, glob: Glob) -> Bools:
    mask = np.zeros(len(starts), np.bool_)
    mask[_matching(blob, starts, ends, glob.segments, glob.starred)] = True
    if not glob.ascii_exact and blob.size and blob.max() >= _ASCII_END:
        wide = np.unique(np.searchsorted(ends, np.flatnonzero(blob >= _ASCII_END), "right"))
        regex = re.compile(fnmatch.translate(glob.pattern))
        for row in wide.tolist():
            text = bytes(blob[starts[row] : ends[row]]).decode("utf-8", "surrogateescape")
            mask[row] = regex.match(text) is not None
    return mask


def _matching(
    blob: npt.NDArray[np.uint8],
    starts: Ints,
    ends: Ints,
    segments: tuple[Segment, ...],
    starred: bool,
) -> Ints:
    """The rows (positions in `starts`) whose strings the segments match."""
    head, tail = segments[0], segments[-1]
    if not starred:
        return _at(blob, starts, _rows(ends - starts == len(head)), head)
    rows = _rows(ends - starts >= len(head) + len(tail))
    rows = _at(blob, starts, rows, head)
    rows = _at(blob, ends - len(tail), rows, tail)
    position, limit = starts[rows] + len(head), ends[rows] - len(tail)
    for segment in segments[1:-1]:
        if not rows.size:
            break
        rows, position, limit = _find(blob, ends, rows, position, limit, segment=segment)
    return rows


def _rows(fits: Bools) -> Ints:
    """The rows where `fits` holds."""
    found: Ints = np.arange(len(fits)) if fits.all() else np.flatnonzero(fits)
    return found


def _find(  # noqa: PLR0913 -- keyword inputs
    blob: npt.NDArray[np.uint8],
    ends: Ints,
    rows: Ints,
    position: Ints,
    limit: Ints,
    *,
    segment: Segment,
) -> tuple[Ints, Ints, Ints]:
    """The rows where `segment` lies inside `[position, limit)`, with the position just past
    its leftmost place there, and their limits."""
    found = _occurrences(blob, segment)
    slot = np.full(len(ends), -1, np.int64)  # row -> its place in `rows`
    slot[rows] = np.arange(len(rows))
    where = slot[np.searchsorted(ends, found, "right")]  # the candidate each place lies in
    inside = where >= 0
    where, found = where[inside], found[inside]
    inside = (found >= position[where]) & (found + len(segment) <= limit[where])
    where, found = where[inside], found[inside]
    leftmost = np.ones(len(where), np.bool_)  # places ascend: a candidate's first is leftmost
    leftmost[1:] = where[1:] != where[:-1]
    where = where[leftmost]
    return rows[where], found[leftmost] + len(segment), limit[where]


def _passes(blob: npt.NDArray[np.uint8], where: Ints, test: _Test) -> Bools:
    """Whether the bytes at `where` pass `test`."""
    found = blob[where]
    passed: Bools = found == test.byte if test.byte is not None else test.table[found]
    return passed


def _rarest_first(blob: npt.NDArray[np.uint8], where: Ints, segment: Segment) -> list[int]:
    """The positions of `segment`'s tests, those that pass least often at a sample of `where`
    first: the rows that fail them leave the later (gathering) tests early."""
    sample = where[:: max(1, len(where) // SAMPLE)]
    rates = [float(_passes(blob, sample + k, test).mean()) for k, test in enumerate(segment)]
    return sorted(range(len(segment)), key=rates.__getitem__)


def _at(blob: npt.NDArray[np.uint8], base: Ints, rows: Ints, segment: Segment) -> Ints:
    """Those of `rows` whose bytes from `base[row]` on pass the tests of `segment`."""
    where = base[rows]
    for k in _rarest_first(blob, where, segment) if rows.size else ():
        passed = _passes(blob, where + k, segment[k])
        if not passed.all():
            rows, where = rows[passed], where[passed]
        if not rows.size:
            break
    return rows


def _occurrences(blob: npt.NDArray[np.uint8], segment: Segment) -> Ints:
    """Every position of `blob` where `segment` matches, ascending (strings' bounds ignored).

    The two rarest tests run over the whole blob, the others only where those passed."""
    places = len(blob) - len(segment) + 1
    if places <= 0:
        return np.zeros(0, np.int64)
    sample = np.arange(0, places, max(1, places // SAMPLE), dtype=np.int64)
    order = _rarest_first(blob, sample, segment)
    hits = _everywhere(blob, places, order[0], segment[order[0]])
    if len(order) > 1:
        hits &= _everywhere(blob, places, order[1], segment[order[1]])
    found: Ints = np.flatnonzero(hits)
    for k in order[2:]:
        if not found.size:
            break
        found = found[_passes(blob, found + k, segment[k])]
    return found


def _everywhere(blob: npt.NDArray[np.uint8], places: int, k: int, test: _Test) -> Bools:
    """Whether byte `k` of a segment placed at each of `places` positions passes `test`."""
    window = blob[k : k + places]
    passed: Bools = window == test.byte if test.byte is not None else test.table[window]
    return passed
