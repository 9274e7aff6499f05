"""Seeded fuzzing of `Index`: every mutated index reads correctly or raises a `FastpackError`.

Mutations hit the header and the section table (byte flips, u32/u64 values, names, dtype
strings, offsets, counts, swapped entries), the sections' contents, and the file's length. A
failure names the seed, the case and its mutations, so it reproduces with the same `SEED`.
"""

from __future__ import annotations

import re
import struct
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from fastpack.formats import CorruptIndexError, FastpackError, Index
from fastpack.formats.index_layout import ENTRY_SIZE, HEADER_SIZE

from ._samples import write_index, write_shard

SEED = 20_240_611
CASES = 2_400

_VALID_NAMES = [
    "shard",
    "label",
    "key.offsets",
    "key.blob",
    "source.offsets",
    "source.blob",
    *(f"{f}.{s}" for f in ("jpg", "cls") for s in ("offset", "size", "crc32")),
]
_ODD_NAMES = [
    b"",
    b"jpg",
    b"txt.offset",
    b"jpg.offsets",
    b"shard ",
    b" label",
    b"label\0x",
    b"SHARD",
    b"key.blob\xff",
    b"\xe9",
    b"a" * 24,
    b"jpg.crc32\n",
    b"cls.offset.offset",
]
_DTYPES = [
    b"<u4",
    b"<u8",
    b"<i8",
    b"|u1",
    b"(2,)u1",
    b"V0",
    b"O",
    b">u4",
    b"u1",
    b"<f8",
    b"S8",
    b"U2",
    b"<c16",
    b"M8[ns]",
    b"V8",
    b"<u4\0x",
    b"\xff\xfe",
    b"",
    b"i",
    b"?",
    b"(1,)<i8",
    b"<u8 ",
    b"|V0",
    b"u8",
    b"=u4",
    b"(0,)u1",
    b"S0",
    b"<U0",
]
_SPEC_DTYPES = {  # by the last part of the section's name
    "shard": b"<u4",
    "label": b"<i8",
    "offsets": b"<u8",
    "blob": b"|u1",
    "offset": b"<u8",
    "size": b"<u8",
    "crc32": b"<u4",
}
_HEADER_FIELDS = [
    ("version", 8, "<I"), ("header_size", 12, "<I"), ("num_samples", 16, "<Q"),
    ("num_shards", 24, "<I"), ("num_sections", 28, "<I"), ("file_size", 32, "<Q"),
    ("reserved", 40, "<Q"), ("reserved", 48, "<Q"), ("reserved", 56, "<Q"),
]  # fmt: skip


@dataclass(frozen=True)
class _Original:
    raw: bytes
    shard_size: int
    table_end: int
    entries: dict[str, tuple[int, int, int]]  # name -> (entry position, offset, count)


def _original(tmp_path: Path) -> _Original:
    data, locations = write_shard()
    path = tmp_path / "valid.fpx"
    write_index(path, locations)
    raw = path.read_bytes()
    (sections,) = struct.unpack_from("<I", raw, 28)
    entries = {}
    for s in range(sections):
        at = HEADER_SIZE + s * ENTRY_SIZE
        name, _, offset, count = struct.unpack_from("<24s8sQQ", raw, at)
        entries[name.rstrip(b"\0").decode()] = (at, offset, count)
    return _Original(raw, len(data), HEADER_SIZE + sections * ENTRY_SIZE, entries)


def _value(rng: np.random.Generator, bits: int, near: list[int]) -> int:
    """A value that tends to sit on a boundary: 0, powers of two, the file's offsets."""
    pool = [0, 1, 2, 3, 4, 63, 64, 65, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1]
    pool += [v + d for v in near for d in (-64, -1, 0, 1, 64)]
    if rng.random() < 0.3:
        return int(rng.integers(0, 1 << bits, dtype=np.uint64))
    return pool[int(rng.integers(len(pool)))] % (1 << bits)


class _Mutator:
    """Applies random mutations to a copy of the valid index, describing each one."""

    def __init__(self, original: _Original, rng: np.random.Generator) -> None:
        self.o, self.rng = original, rng
        self.near = [len(original.raw)] + [o for _, o, _ in original.entries.values()]
        self.near += [c for _, _, c in original.entries.values()]

    def _entry(self) -> tuple[str, int]:
        name = list(self.o.entries)[int(self.rng.integers(len(self.o.entries)))]
        return name, self.o.entries[name][0]

    def flip(self, raw: bytearray) -> str:
        spots = self.rng.integers(0, self.o.table_end, size=int(self.rng.integers(1, 5)))
        for at in spots.tolist():
            raw[at] ^= int(self.rng.integers(1, 256))
        return f"flip bytes {spots.tolist()}"

    def word(self, raw: bytearray) -> str:
        fmt = ("<I", "<Q")[int(self.rng.integers(2))]
        width = struct.calcsize(fmt)
        at = width * int(self.rng.integers(0, self.o.table_end // width))
        value = _value(self.rng, 8 * width, self.near)
        struct.pack_into(fmt, raw, at, value)
        return f"{fmt} {value} at {at}"

    def header(self, raw: bytearray) -> str:
        field, at, fmt = _HEADER_FIELDS[int(self.rng.integers(len(_HEADER_FIELDS)))]
        value = _value(self.rng, 8 * struct.calcsize(fmt), self.near)
        struct.pack_into(fmt, raw, at, value)
        return f"header {field} = {value}"

    def name(self, raw: bytearray) -> str:
        section, at = self._entry()
        pick = self.rng.random()
        if pick < 0.4:
            new = _VALID_NAMES[int(self.rng.integers(len(_VALID_NAMES)))].encode()
        elif pick < 0.8:
            new = _ODD_NAMES[int(self.rng.integers(len(_ODD_NAMES)))]
        else:
            new = self.rng.bytes(int(self.rng.integers(1, 25)))
        raw[at : at + 24] = new[:24].ljust(24, b"\0")
        return f"name of {section!r} = {new!r}"

    def dtype(self, raw: bytearray) -> str:
        section, at = self._entry()
        if self.rng.random() < 0.85:
            new = _DTYPES[int(self.rng.integers(len(_DTYPES)))]
        else:
            new = self.rng.bytes(int(self.rng.integers(1, 9)))
        raw[at + 24 : at + 32] = new[:8].ljust(8, b"\0")
        return f"dtype of {section!r} = {new!r}"

    def offset(self, raw: bytearray) -> str:
        section, at = self._entry()
        value = _value(self.rng, 64, self.near)
        struct.pack_into("<Q", raw, at + 32, value)
        return f"offset of {section!r} = {value}"

    def count(self, raw: bytearray) -> str:
        section, at = self._entry()
        value = _value(self.rng, 64, self.near)
        struct.pack_into("<Q", raw, at + 40, value)
        return f"count of {section!r} = {value}"

    def swap(self, raw: bytearray) -> str:
        (a, at), (b, bt) = self._entry(), self._entry()
        raw[at : at + ENTRY_SIZE], raw[bt : bt + ENTRY_SIZE] = (
            raw[bt : bt + ENTRY_SIZE],
            raw[at : at + ENTRY_SIZE],
        )
        return f"swap entries {a!r} and {b!r}"

    def data(self, raw: bytearray) -> str:
        """Overwrite an element of a section: reads may change, but only into FastpackErrors."""
        section, _ = self._entry()
        _, offset, count = self.o.entries[section]
        if section.endswith(".blob"):
            at = offset + int(self.rng.integers(max(count, 1)))
            raw[at] = int(self.rng.integers(128, 256))  # never starts a valid UTF-8 sequence alone
            return f"byte {raw[at]} into {section!r} at {at}"
        fmt = "<I" if section in ("shard",) or section.endswith(".crc32") else "<Q"
        at = offset + struct.calcsize(fmt) * int(self.rng.integers(count))
        value = _value(self.rng, 8 * struct.calcsize(fmt), self.near)
        struct.pack_into(fmt, raw, at, value)
        return f"{fmt} {value} into {section!r} at {at}"

    def resize(self, raw: bytearray) -> str:
        pick = self.rng.random()
        if pick < 0.5:
            keep = int(self.rng.integers(0, len(raw)))
            del raw[keep:]
            return f"truncate to {keep}"
        extra = self.rng.bytes(int(self.rng.integers(1, 257)))
        raw += extra
        if pick < 0.75:
            return f"append {len(extra)} bytes"
        struct.pack_into("<Q", raw, 32, len(raw))  # an honest file_size: still a valid index
        return f"append {len(extra)} bytes and set file_size = {len(raw)}"

    def mutate(self) -> tuple[bytes, list[str], bool]:
        """A mutated copy, its mutations, and whether any of them changed section contents."""
        raw = bytearray(self.o.raw)
        table: list[Callable[[bytearray], str]] = [
            self.flip,
            self.word,
            self.header,
            self.name,
            self.dtype,
            self.offset,
            self.count,
            self.swap,
        ]
        kinds = [table[int(self.rng.integers(len(table)))] for _ in range(self._how_many())]
        touches_data = self.rng.random() < 0.15
        if touches_data:
            kinds.append(self.data)
        if not kinds or self.rng.random() < 0.12:
            kinds.append(self.resize)  # last, so the others find the bytes they expect
        mutations = [kind(raw) for kind in kinds]
        return bytes(raw), mutations, touches_data

    def _how_many(self) -> int:
        return int(self.rng.choice([0, 1, 1, 1, 1, 2, 2, 3]))


def _outcome(path: Path, call: Callable[..., object], *args: object) -> object:
    """What `call(*args)` returns, or `("raised", name)` for the FastpackError it raises, which
    must name the file."""
    try:
        return call(*args)
    except FastpackError as e:
        error = e
    if str(path) not in str(error):
        raise AssertionError(f"{type(error).__name__} does not name the file: {error}")
    return ("raised", type(error).__name__)


def _read_all(ix: Index, path: Path, shard_size: int) -> list[object]:
    """Every section, key, source and location of `ix`."""
    fields = sorted(ix.fields)  # the table's order, which SPEC leaves free
    out: list[object] = [len(ix), fields, ix.shard.tolist(), ix.label.tolist()]
    for f in fields:
        out += [ix.offsets(f).tolist(), ix.sizes(f).tolist(), ix.crc32(f).tolist()]
    for i in range(len(ix)):
        out += [_outcome(path, ix.key, i), _outcome(path, ix.source, i)]
        out += [_outcome(path, ix.locate, i, f, shard_size) for f in fields]
    return out


def _layout(raw: bytes) -> object:
    """num_samples and the set of section entries, as written: equal layouts read the same."""
    if len(raw) < HEADER_SIZE:
        return None
    n, _, sections = struct.unpack_from("<QII", raw, 16)
    end = HEADER_SIZE + ENTRY_SIZE * sections
    if end > len(raw):
        return None
    entries = {raw[at : at + ENTRY_SIZE] for at in range(HEADER_SIZE, end, ENTRY_SIZE)}
    return n, sections, frozenset(entries)


def test_fuzzed_index_reads_correctly_or_raises_a_fastpack_error(tmp_path: Path) -> None:
    original = _original(tmp_path)
    expected = _read_all(Index(tmp_path / "valid.fpx"), tmp_path, original.shard_size)
    assert not [v for v in expected if isinstance(v, tuple) and v[0] == "raised"]
    rng = np.random.default_rng(SEED)
    mutator = _Mutator(original, rng)
    path = tmp_path / "case.fpx"
    tally: Counter[str] = Counter()
    failures: list[str] = []
    for case in range(CASES):
        raw, mutations, touches_data = mutator.mutate()
        where = f"seed {SEED} case {case} ({'; '.join(mutations)})"
        path.write_bytes(raw)
        try:
            ix = Index(path)
        except FastpackError as e:
            tally[f"open: {type(e).__name__}"] += 1
            if str(path) not in str(e):
                failures.append(f"{where}: {type(e).__name__} does not name the file: {e}")
            continue
        except Exception as e:
            frame = traceback.extract_tb(e.__traceback__)[-1]
            failures.append(f"{where}: Index() raised {e!r} at {frame.filename}:{frame.lineno}")
            continue
        finally:
            path.unlink()
        try:
            found = _read_all(ix, path, original.shard_size)
        except Exception as e:
            frame = traceback.extract_tb(e.__traceback__)[-1]
            failures.append(f"{where}: reading raised {e!r} at {frame.filename}:{frame.lineno}")
            continue
        errors = sorted({v[1] for v in found if isinstance(v, tuple) and v[0] == "raised"})
        tally[f"read: {', '.join(errors) or 'ok'}"] += 1
        same_layout = _layout(raw) == _layout(original.raw)
        if not touches_data and same_layout and found != expected:
            failures.append(f"{where}: read {found}, the valid index reads {expected}")
        if not touches_data and not same_layout:
            tally["opened with another layout"] += 1
        del ix
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(tally.items()))
    print(f"\n{CASES} cases, seed {SEED}: {summary}")
    assert not failures, f"{len(failures)} of {CASES} cases failed:\n" + "\n".join(failures[:20])
    # The mutations reach every check: each outcome class turns up.
    for outcome in (
        "open: BadMagicError",
        "open: UnsupportedVersionError",
        "open: TruncatedFileError",
        "open: CorruptIndexError",
        "read: ok",
    ):
        assert tally[outcome] >= 5, f"{outcome!r} only {tally[outcome]} times: {summary}"
    assert any("CorruptIndexError" in k and k.startswith("read:") for k in tally), summary
    assert any("OffsetOutOfRangeError" in k for k in tally), summary


@pytest.mark.parametrize("dtype", _DTYPES)
def test_every_fuzzed_dtype_in_every_entry(tmp_path: Path, dtype: bytes) -> None:
    """The exhaustive version of the dtype mutation: a section opens with its SPEC dtype only."""
    original = _original(tmp_path)
    path = tmp_path / "case.fpx"
    for name, (at, _, _) in original.entries.items():
        raw = bytearray(original.raw)
        raw[at + 24 : at + 32] = dtype.ljust(8, b"\0")
        path.write_bytes(bytes(raw))
        if dtype == _SPEC_DTYPES[name.rsplit(".", 1)[-1]]:
            assert Index(path).num_samples == 3
        else:
            with pytest.raises(
                CorruptIndexError, match=rf"case\.fpx: section '{re.escape(name)}' has dtype"
            ):
                Index(path)
