"""Mutations of the other files a reader trusts, and of loader states.

- `mutate_index`: the binary index (formats/SPEC.md section 3): header fields, section-table
  entries (names, dtypes, offsets, counts) set to boundary values or swapped, section contents,
  byte flips, truncation and appended bytes. tests/formats/test_index_fuzz.py fuzzes `Index` on a
  hand-made index; these cases start from a built dataset's index and are read through `Dataset`.
- `mutate_json`: one edit of a JSON value somewhere in a document (a value of another type or at
  a boundary, a key removed or added, an item dropped or repeated); `mutate_manifest` applies it
  to `fastpack.json` (or flips bytes of its text); `mutate_view` edits a view file's preamble,
  header, zstd frame or trailer, with its checksums recomputed or not.
- `mutate_state`: one JSON edit of a loader state, and whether a schema check must refuse it
  (`StateSchema`): a field of the wrong type, out of its range, missing, or changed where it
  names what the loader reads.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import zstandard
from fastpack.formats.checksum import crc32c_extend

Rng = np.random.Generator
Path_ = tuple[str | int, ...]  # keys and list positions from the document's root

INDEX_HEADER, INDEX_ENTRY = 64, 48
_INDEX_HEADER_FIELDS = (
    ("version", 8, "<I"),
    ("header_size", 12, "<I"),
    ("num_samples", 16, "<Q"),
    ("num_shards", 24, "<I"),
    ("num_sections", 28, "<I"),
    ("file_size", 32, "<Q"),
)
_DTYPES = (b"<u4", b"<u8", b"<i8", b"|u1", b">u4", b"<f8", b"O", b"V0", b"S8", b"(2,)u1", b"")
_HUGE = (2**31, 2**32 - 1, 2**32, 2**53, 2**63 - 1, 2**63, 2**64 - 1)


def _boundary(rng: Rng, bits: int, near: list[int]) -> int:
    pool = [0, 1, 2, 3, 7, 8, 63, 64, 65, *_HUGE] + [v + d for v in near for d in (-8, -1, 1, 8)]
    if rng.random() < 0.25:
        return int(rng.integers(0, 1 << min(bits, 63)))
    return int(pool[int(rng.integers(len(pool)))]) % (1 << bits)


class _IndexEdits:
    """The edits of one index file; each edits `data` and says what it did (None: the file is
    too short for it)."""

    def __init__(self, raw: bytes, rng: Rng) -> None:
        self.data, self.rng = bytearray(raw), rng
        (self.sections,) = struct.unpack_from("<I", raw, 28)
        self.table_end = INDEX_HEADER + INDEX_ENTRY * self.sections
        self.near = [len(raw), self.table_end]
        for s in range(self.sections):
            self.near += struct.unpack_from("<QQ", raw, INDEX_HEADER + INDEX_ENTRY * s + 32)

    def _entry(self) -> int | None:
        """A random section entry's offset, None if the file no longer holds it."""
        at = INDEX_HEADER + INDEX_ENTRY * int(self.rng.integers(max(self.sections, 1)))
        return at if len(self.data) >= at + INDEX_ENTRY else None

    def header(self) -> str | None:
        name, at, fmt = _INDEX_HEADER_FIELDS[int(self.rng.integers(len(_INDEX_HEADER_FIELDS)))]
        if len(self.data) < at + struct.calcsize(fmt):
            return None
        value = _boundary(self.rng, 8 * struct.calcsize(fmt), self.near)
        struct.pack_into(fmt, self.data, at, value)
        return f"header {name} = {value}"

    def place(self) -> str | None:
        entry = self._entry()
        if entry is None:
            return None
        part = ("offset", "count")[int(self.rng.integers(2))]
        value = _boundary(self.rng, 64, self.near)
        struct.pack_into("<Q", self.data, entry + (32 if part == "offset" else 40), value)
        return f"section entry at {entry}: {part} = {value}"

    def dtype(self) -> str | None:
        entry = self._entry()
        if entry is None:
            return None
        dtype = _DTYPES[int(self.rng.integers(len(_DTYPES)))]
        self.data[entry + 24 : entry + 32] = dtype.ljust(8, b"\0")
        return f"section entry at {entry}: dtype {dtype!r}"

    def name(self) -> str | None:
        entry = self._entry()
        if entry is None:
            return None
        name = bytes(self.data[entry : entry + 24]).rstrip(b"\0")
        new = name[: int(self.rng.integers(len(name) + 1))] + self.rng.bytes(
            int(self.rng.integers(3))
        )
        self.data[entry : entry + 24] = new[:24].ljust(24, b"\0")
        return f"section name {name!r} -> {new!r}"

    def swap(self) -> str | None:
        a, b = self._entry(), self._entry()
        if a is None or b is None or a == b:
            return None
        first, second = bytes(self.data[a : a + 48]), bytes(self.data[b : b + 48])
        self.data[a : a + 48], self.data[b : b + 48] = second, first
        return f"section entries at {a} and {b} swapped"

    def content(self) -> str | None:
        if len(self.data) <= self.table_end + 8:
            return None
        at = int(self.rng.integers(self.table_end, len(self.data) - 8)) & ~7
        value = _boundary(self.rng, 64, self.near)
        struct.pack_into("<Q", self.data, at, value)
        return f"u64 {value} into the sections at {at}"

    def flip(self) -> str | None:
        if not self.data:
            return None
        spots = self.rng.integers(0, len(self.data), int(self.rng.integers(1, 9))).tolist()
        for at in spots:
            self.data[at] ^= int(self.rng.integers(1, 256))
        return f"bytes flipped at {sorted(spots)}"

    def cut(self) -> str | None:
        if not self.data:
            return None
        keep = int(self.rng.integers(0, len(self.data)))
        del self.data[keep:]
        return f"cut to {keep} bytes"

    def append(self) -> str | None:
        extra = self.rng.bytes(int(self.rng.integers(1, 300)))
        self.data += extra
        if self.rng.random() < 0.5 and len(self.data) >= 40:
            struct.pack_into("<Q", self.data, 32, len(self.data))  # an honest file_size
        return f"{len(extra)} bytes appended"


def mutate_index(raw: bytes, rng: Rng) -> tuple[bytes, str]:
    """One to three edits of an index file (header fields, section entries, section contents,
    bytes, length), described."""
    edits = _IndexEdits(raw, rng)
    table = (edits.header, edits.place, edits.dtype, edits.name, edits.swap, edits.content,
             edits.flip, edits.cut, edits.append)  # fmt: skip
    done = [table[int(rng.integers(len(table)))]() for _ in range(int(rng.choice([1, 1, 2, 3])))]
    return bytes(edits.data), "; ".join(d for d in done if d) or "unchanged"


# -- JSON documents ----------------------------------------------------------------------------


def _values(rng: Rng, old: Any) -> list[Any]:
    """Replacement values: other types, boundaries, and the old value in another type."""
    pool: list[Any] = [
        None, True, False, 0, 1, -1, 2, 2**31, 2**32, 2**53 + 1, 2**63 - 1, 2**63, 2**64, -(2**63),
        10**30, 0.5, 12.5, -0.0, 1e308, float("inf"), float("nan"), "", "12", "x" * 1000, "\x00",
        "é", "../x", [], [0], [[[[[]]]]], {}, {"a": 1}, list(range(300)),
    ]  # fmt: skip
    if isinstance(old, bool):
        pool += [int(old), str(old).lower(), not old]
    elif isinstance(old, int):
        pool += [old + 1, old - 1, float(old), str(old), old + 0.5, -old, old * 2**32]
    elif isinstance(old, float):
        pool += [int(old), str(old)]
    elif isinstance(old, str):
        pool += [old[:-1], old + "x", old.upper(), old * 2, old.encode().hex()[: len(old)]]
    elif isinstance(old, list):
        pool += [old[:-1], old + old[-1:], old[::-1], dict(enumerate(old))]
    elif isinstance(old, dict):
        pool += [list(old.values()), {k: old[k] for k in list(old)[:-1]}]
    return pool


def _paths(doc: Any, here: Path_ = ()) -> list[Path_]:
    """Every path in `doc` (the root's too), depth first."""
    found = [here]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, (*here, key))
    elif isinstance(doc, list):
        for k, value in enumerate(doc[:6]):  # a long list: its first items stand for the rest
            found += _paths(value, (*here, k))
    return found


def _copy(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: _copy(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_copy(v) for v in doc]
    return doc


@dataclass(frozen=True)
class JsonEdit:
    """One edit: the document after it, its path, what was done."""

    doc: Any
    path: Path_
    text: str

    @property
    def field(self) -> str | None:
        """The top-level key under which the edit was made (None: the root itself)."""
        return None if not self.path else str(self.path[0])


def mutate_json(doc: Any, rng: Rng) -> JsonEdit:
    """One edit at a random path of a copy of `doc`."""
    doc = _copy(doc)
    paths = _paths(doc)
    path = paths[int(rng.integers(len(paths)))]
    parent: Any = doc
    for part in path[:-1]:
        parent = parent[part]
    old = doc if not path else parent[path[-1]]
    variant = rng.random()
    if path and variant < 0.12:
        parent.pop(path[-1])  # a dict's key or a list's item
        return JsonEdit(doc, path, f"{_name(path)} removed")
    if isinstance(old, dict) and variant < 0.2:
        old["unknown_" + str(int(rng.integers(100)))] = 1
        return JsonEdit(doc, path, f"a key added to {_name(path) or 'the root'}")
    pool = _values(rng, old)
    new = pool[int(rng.integers(len(pool)))]
    if not path:
        return JsonEdit(new, path, f"the whole document = {_short(new)}")
    parent[path[-1]] = new
    return JsonEdit(doc, path, f"{_name(path)} = {_short(new)} (was {_short(old)})")


def _name(path: Path_) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _text_edit(text: bytes, rng: Rng) -> tuple[bytes, str]:
    data = bytearray(text)
    if rng.random() < 0.3:
        keep = int(rng.integers(len(data)))
        return bytes(data[:keep]), f"text cut to {keep} bytes"
    spots = rng.integers(0, len(data), int(rng.integers(1, 5))).tolist()
    for at in spots:
        data[at] = int(rng.choice([0x20, 0x09, 0x0B, 0x22, 0x7B, 0x5D, 0x30, 0x80, 0xFF, 0x00]))
    return bytes(data), f"text bytes replaced at {sorted(spots)}"


def mutate_manifest(text: bytes, rng: Rng) -> tuple[bytes, str]:
    """A JSON edit of a manifest (written as its writer writes it), or bytes of its text."""
    if rng.random() < 0.25:
        return _text_edit(text, rng)
    edit = mutate_json(json.loads(text), rng)
    out = json.dumps(edit.doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    return out.encode(), edit.text


_VIEW_PREAMBLE = struct.Struct("<8sII")


@dataclass
class _ViewParts:
    """A view file taken apart (formats/SPEC.md section 8): preamble, JSON header, zstd frame
    of the bitmap, and whether a CRC-32C of the rest ends it (version 2)."""

    magic: bytes
    version: int
    header: Any
    frame: bytes
    trailer: bool

    @classmethod
    def of(cls, raw: bytes) -> _ViewParts:
        magic, version, size = _VIEW_PREAMBLE.unpack_from(raw)
        trailer = version >= 2
        end = len(raw) - 4 * trailer
        return cls(magic, version, json.loads(raw[16 : 16 + size]), raw[16 + size : end], trailer)

    def join(self, rng: Rng, fix: bool) -> bytes:
        text = json.dumps(self.header, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        out = _VIEW_PREAMBLE.pack(self.magic, self.version, len(text.encode())) + text.encode()
        out += self.frame
        if self.trailer:
            out += struct.pack("<I", crc32c_extend(0, out) if fix else int(rng.integers(2**32)))
        return out


def _view_header(view: _ViewParts, rng: Rng, fix: bool) -> str:
    edit = mutate_json(view.header, rng)
    view.header = edit.doc
    return f"header {edit.text}"


def _view_bitmap(view: _ViewParts, rng: Rng, fix: bool) -> str:
    bitmap = bytearray(zstandard.ZstdDecompressor().decompress(view.frame))
    for at in rng.integers(0, len(bitmap) + 2, int(rng.integers(1, 4))).tolist():
        if at < len(bitmap):
            bitmap[at] ^= 1 << int(rng.integers(8))
        else:
            bitmap.append(int(rng.integers(256)))
    view.frame = zstandard.ZstdCompressor().compress(bytes(bitmap))
    if isinstance(view.header, dict) and fix:
        view.header["rows_crc32c"] = crc32c_extend(0, bytes(bitmap))
    return f"a bitmap of {len(bitmap)} bytes, bits changed"


def _view_frame(view: _ViewParts, rng: Rng, fix: bool) -> str:
    data = bytearray(view.frame)
    for at in rng.integers(0, len(data), int(rng.integers(1, 5))).tolist():
        data[at] ^= int(rng.integers(1, 256))
    view.frame = bytes(data)
    return "zstd frame bytes flipped"


def _view_preamble(view: _ViewParts, rng: Rng, fix: bool) -> str:
    if rng.random() < 0.5:
        view.version = int(rng.choice([0, 1, 2, 3, 255, 2**32 - 1]))
        return f"version {view.version}"
    view.magic = view.magic[:-1] + bytes((view.magic[-1] ^ 1,))
    return "magic"


def mutate_view(raw: bytes, rng: Rng) -> tuple[bytes, str]:
    """An edit of a view file: its preamble, its JSON header, its bitmap or zstd frame, most
    with the checksums recomputed after it, to reach the checks behind them; or bytes of the
    whole file flipped or cut."""
    if rng.random() < 0.2:
        data = bytearray(raw)
        if rng.random() < 0.5:
            keep = int(rng.integers(len(data)))
            return bytes(data[:keep]), f"cut to {keep} bytes"
        spots = rng.integers(0, len(data), int(rng.integers(1, 6))).tolist()
        for at in spots:
            data[at] ^= int(rng.integers(1, 256))
        return bytes(data), f"bytes flipped at {sorted(spots)}"
    view, fix = _ViewParts.of(raw), bool(rng.random() < 0.8)
    edits = (_view_header, _view_bitmap, _view_frame, _view_preamble)
    text = edits[int(rng.integers(len(edits)))](view, rng, fix)
    return view.join(rng, fix), text + ("" if fix else " (checksums left as they were)")


# -- loader states -----------------------------------------------------------------------------

CONST, INT, POSITION, NULLABLE_INT, INTS, SEGMENTS = "const", "int", "pos", "int?", "ints", "seg"


@dataclass(frozen=True)
class StateSchema:
    """What a state's fields must be: `kinds` maps a field to one of the kinds above (a field
    of the saved state not listed there must stay as saved); `optional` fields may be left out;
    `aliases` are the words an error may name a field by."""

    kinds: Mapping[str, str]
    optional: frozenset[str] = frozenset()
    aliases: Mapping[str, tuple[str, ...]] | None = None
    length: int = 0  # positions of the order, for POSITION

    def names(self, field: str) -> tuple[str, ...]:
        return (field, *((self.aliases or {}).get(field, ())))


def _is_int(value: Any) -> bool:
    return type(value) is int


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (1 is not 1.0 or True)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _fits(kind: str, value: Any, base: Any, length: int) -> bool | None:
    """Whether a value of field kind `kind` must be accepted (True), must be refused (False),
    or may be either (None: a value of the right type whose range the schema leaves open)."""
    if kind == CONST:
        verdict: bool | None = _same(value, base)
    elif kind == POSITION:
        verdict = _is_int(value) and 0 <= value <= length
    elif kind in (INT, NULLABLE_INT):
        verdict = (value is None and kind == NULLABLE_INT) or (_is_int(value) and value >= 0)
        if verdict and value is not None and value >= 2**31:
            verdict = None  # a schema may set an upper bound there
    elif kind == INTS:
        ok = isinstance(value, list) and len(value) == len(base) and all(map(_is_int, value))
        verdict = None if ok else False
    else:  # SEGMENTS: lists of four ints each
        ok = isinstance(value, list) and all(
            isinstance(s, list) and len(s) == 4 and all(map(_is_int, s)) for s in value
        )
        verdict = None if ok else False
    return verdict


def must_refuse(schema: StateSchema, base: Mapping[str, Any], state: Any) -> bool | None:
    """Whether a check by `schema` must refuse `state` (None: it may accept or refuse it)."""
    if not isinstance(state, dict):
        return True
    verdict: bool | None = True
    kinds = {**dict.fromkeys(base, CONST), **schema.kinds}  # a field not listed: as saved
    for field, kind in kinds.items():
        if field not in state:
            if field not in schema.optional:
                return True
            continue
        fits = _fits(kind, state[field], base.get(field), schema.length)
        if fits is False:
            return True
        if fits is None:
            verdict = None
    if set(state) - set(kinds):
        verdict = None  # an unknown field: a strict schema refuses it, a lenient one ignores it
    return False if verdict else None


@dataclass(frozen=True)
class StateCase:
    state: Any
    refuse: bool | None  # must be refused (True), may go either way (None), must pass (False)
    field: str | None  # the field an error must name
    text: str


def _valid_edit(base: Mapping[str, Any], schema: StateSchema, rng: Rng) -> JsonEdit | None:
    """Another valid value of one of the state's number fields (None: it has none)."""
    fields = [f for f in base if schema.kinds.get(f) in (INT, POSITION, NULLABLE_INT)]
    if not fields:
        return None
    field = fields[int(rng.integers(len(fields)))]
    top = schema.length if schema.kinds[field] == POSITION else 1000
    value: int | None = int(rng.integers(0, top + 1))
    if schema.kinds[field] == NULLABLE_INT and rng.random() < 0.5:
        value = None
    return JsonEdit({**base, field: value}, (field,), f"{field} = {value} (was {base[field]})")


def mutate_state(base: Mapping[str, Any], schema: StateSchema, rng: Rng) -> StateCase:
    """One edit of a saved state: 1 in 4 a valid value of a number field, which must be
    accepted; else any JSON edit (`mutate_json`), judged by `must_refuse`."""
    edit = _valid_edit(base, schema, rng) if rng.random() < 0.25 else None
    edit = edit or mutate_json(dict(base), rng)
    refuse = must_refuse(schema, base, edit.doc)
    return StateCase(edit.doc, refuse, edit.field, edit.text)
