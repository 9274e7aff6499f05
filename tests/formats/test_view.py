"""View files (formats/SPEC.md section 8): round trips, and every malformed file refused with an
error that names it."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zstandard
from fastpack.formats import (
    MANIFEST_NAME,
    BadMagicError,
    ChecksumMismatchError,
    DatasetNotFoundError,
    FastpackError,
    TruncatedFileError,
    UnsupportedVersionError,
    View,
    ViewError,
    ViewMismatchError,
    read_manifest,
    read_view_file,
    write_view_file,
)
from fastpack.formats.checksum import crc32c_extend
from fastpack.formats.manifest import manifest_digest
from fastpack.formats.view import VIEW_MAGIC, check_view_dataset, view_from_bytes, view_to_bytes
from hypothesis import given, settings
from hypothesis import strategies as st

GOLDEN = Path(__file__).parent / "golden"
GOLDEN_V2 = Path(__file__).parent / "golden_v2"
DIGEST = "ab" * 32


def make_view(
    rows: list[int] | np.ndarray | None = None, num_samples: int = 20, **changes: object
) -> View:
    fields: dict[str, object] = {
        "name": "train",
        "dataset": DIGEST,
        "num_samples": num_samples,
        "rows": np.array([1, 2, 3, 5, 8, 13] if rows is None else rows),
        "definition": {"fraction": 0.5, "seed": 3},
        "balance": None,
    }
    fields.update(changes)
    return View(**fields)  # type: ignore[arg-type]


def parts(data: bytes) -> tuple[int, dict[str, object], bytes]:
    """(version, header, frame) of a view file's bytes (a version-2 file's without its
    trailing checksum)."""
    _, version, size = struct.unpack_from("<8sII", data)
    end = len(data) - 4 if version == 2 else len(data)
    return version, json.loads(data[16 : 16 + size]), data[16 + size : end]


def assemble(header: dict[str, object], frame: bytes, version: int = 1) -> bytes:
    text = json.dumps(header).encode()
    return VIEW_MAGIC + struct.pack("<II", version, len(text)) + text + frame


def assert_same(a: View, b: View) -> None:
    assert (a.name, a.dataset, a.num_samples, a.definition, a.balance) == (
        b.name,
        b.dataset,
        b.num_samples,
        b.definition,
        b.balance,
    )
    assert a.rows.dtype == b.rows.dtype == np.int64
    assert np.array_equal(a.rows, b.rows)


@settings(max_examples=60, deadline=None)
@given(
    num_samples=st.integers(0, 3000),
    data=st.data(),
    balance=st.sampled_from([None, "class"]),
)
def test_round_trip(num_samples: int, data: st.DataObject, balance: str | None) -> None:
    chosen = data.draw(st.sets(st.integers(0, max(num_samples - 1, 0)), max_size=num_samples))
    view = make_view(sorted(chosen), num_samples=num_samples, balance=balance)
    back = view_from_bytes(view_to_bytes(view), "mem")
    assert_same(back, view)
    assert back.count == len(chosen)
    assert back.digest() == view.digest()


def test_file_layout(tmp_path: Path) -> None:
    view = make_view()
    path = tmp_path / "views" / "train.fpview"
    write_view_file(path, view)  # makes the folder
    data = path.read_bytes()
    assert data[:8] == b"\x89FPV\r\n\x1a\n"
    version, header, frame = parts(data)
    assert version == 2
    assert struct.unpack("<I", data[-4:])[0] == crc32c_extend(0, data[:-4])
    bitmap = zstandard.ZstdDecompressor().decompress(frame)
    assert bitmap == np.packbits(view.mask(), bitorder="little").tobytes()
    assert len(bitmap) == 3  # 20 bits
    assert header == {
        "name": "train",
        "dataset": DIGEST,
        "num_samples": 20,
        "count": 6,
        "definition": {"fraction": 0.5, "seed": 3},
        "balance": None,
        "rows_crc32c": crc32c_extend(0, bitmap),
    }
    assert list(json.loads(data[16 : 16 + struct.unpack_from("<I", data, 12)[0]])) == sorted(header)
    assert_same(read_view_file(path), view)


def test_digest_changes_with_rows_name_balance_and_dataset() -> None:
    view = make_view()
    assert view.digest().startswith("train@")
    assert view.digest() == make_view().digest()
    others = [
        make_view([1, 2, 3, 5, 8]),
        make_view(name="val"),
        make_view(balance="class"),
        make_view(dataset="cd" * 32),
        make_view(num_samples=30),
    ]
    assert len({view.digest(), *(o.digest() for o in others)}) == 6


def test_manifest_digest_is_the_sha256_of_the_manifest_file() -> None:
    for root in (GOLDEN, GOLDEN_V2):
        manifest = read_manifest(root / MANIFEST_NAME)
        expected = hashlib.sha256((root / MANIFEST_NAME).read_bytes()).hexdigest()
        assert manifest_digest(manifest) == expected
    changed = dataclasses.replace(manifest, stats={**manifest.stats, "rejected": 1})
    assert manifest_digest(changed) != manifest_digest(manifest)


def test_view_of_another_dataset_is_refused() -> None:
    manifest = read_manifest(GOLDEN / MANIFEST_NAME)
    mine = make_view([0, 1], num_samples=manifest.num_samples, dataset=manifest_digest(manifest))
    assert check_view_dataset(mine, manifest, "x") is mine
    with pytest.raises(ViewMismatchError, match=r"x: view 'train' was made for another dataset"):
        check_view_dataset(make_view([0, 1], num_samples=manifest.num_samples), manifest, "x")
    wrong_size = make_view([0], num_samples=manifest.num_samples + 1, dataset=mine.dataset)
    with pytest.raises(ViewMismatchError, match="another dataset"):
        check_view_dataset(wrong_size, manifest, "x")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"rows": np.array([3, 2])}, "ascending and unique; row 1 is 2 after 3"),
        ({"rows": np.array([2, 2])}, "ascending and unique"),
        ({"rows": np.array([0, 20])}, r"outside the dataset's samples \[0, 20\)"),
        ({"rows": np.array([-1, 2])}, "outside"),
        ({"rows": np.array([0.5])}, "1-D array of ints"),
        ({"name": "a/b"}, "a view name is"),
        ({"name": ".hidden"}, "a view name is"),
        ({"dataset": "xyz"}, "is not a hex SHA-256"),
        ({"balance": "label"}, "balance 'label'"),
    ],
)
def test_bad_view_objects(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ViewError, match=message):
        make_view(**changes)


def test_rows_are_read_only_copies() -> None:
    rows = np.array([1, 4], np.int64)
    view = make_view(rows)
    rows[0] = 0
    assert view.rows.tolist() == [1, 4]
    with pytest.raises(ValueError, match="read-only"):
        view.rows[0] = 2


def _header(**changes: object) -> dict[str, object]:
    header = parts(view_to_bytes(make_view()))[1]
    header.update(changes)
    return header


def _frame(bitmap: bytes) -> bytes:
    return zstandard.ZstdCompressor().compress(bitmap)


GOOD = view_to_bytes(make_view())
GOOD_FRAME = parts(GOOD)[2]
GOOD_BITMAP = zstandard.ZstdDecompressor().decompress(GOOD_FRAME)


def _flipped_bitmap() -> bytes:
    bitmap = bytearray(GOOD_BITMAP)
    bitmap[0] ^= 0x01  # row 0 joins: the count and the CRC both disagree now
    return bytes(bitmap)


def _without(key: str) -> dict[str, object]:
    header = _header()
    del header[key]
    return header


HOSTILE: list[tuple[str, bytes, type[FastpackError], str]] = [
    ("empty", b"", TruncatedFileError, "0 bytes, shorter than the 16-byte preamble"),
    ("short", GOOD[:10], TruncatedFileError, "shorter than the 16-byte preamble"),
    ("not a view", b"\x89PNG\r\n\x1a\n" + GOOD[8:], BadMagicError, "bad magic"),
    ("short other", b"PK\x03", BadMagicError, "bad magic"),
    ("version", assemble(_header(), GOOD_FRAME, version=3), UnsupportedVersionError,
     r"view version 3, this reader supports \(1, 2\)"),
    ("v2 checksum", GOOD[:-1] + bytes([GOOD[-1] ^ 1]), ChecksumMismatchError,
     "the file's CRC-32C is [0-9a-f]{8}, its last 4 bytes record [0-9a-f]{8}: the file is "
     "damaged or cut short"),
    ("v2 definition", GOOD.replace(b'"seed":3', b'"seed":4'), ChecksumMismatchError,
     "the file's CRC-32C is"),
    ("v2 no checksum", assemble(_header(), b"ab", version=2), TruncatedFileError,
     "too short for its header"),
    ("v2 cut", GOOD[:-7], ChecksumMismatchError, "damaged or cut short"),
    ("header cut", GOOD[:40], TruncatedFileError, "-byte header alone ends at byte"),
    ("no bitmap", assemble(_header(), b""), TruncatedFileError, "without the bitmap"),
    ("bitmap cut", assemble(_header(), GOOD_FRAME[:-4]), TruncatedFileError, "cut short"),
    ("not JSON", VIEW_MAGIC + struct.pack("<II", 1, 5) + b"{oops" + GOOD_FRAME, ViewError,
     "the header is not UTF-8 JSON"),
    ("not UTF-8", VIEW_MAGIC + struct.pack("<II", 1, 2) + b"\xff\xfe" + GOOD_FRAME, ViewError,
     "the header is not UTF-8 JSON"),
    ("JSON list", assemble([], GOOD_FRAME), ViewError, "a JSON list, not an object"),  # type: ignore[arg-type]
    ("missing key", assemble(_without("count"), GOOD_FRAME), ViewError,
     "header keys missing: count; unknown: -"),
    ("unknown key", assemble(_header(extra=1), GOOD_FRAME), ViewError,
     "missing: -; unknown: extra"),
    ("bool count", assemble(_header(count=True), GOOD_FRAME), ViewError,
     "header key 'count' is True, expected int"),
    ("text samples", assemble(_header(num_samples="20"), GOOD_FRAME), ViewError,
     "'num_samples' is '20', expected int"),
    ("negative", assemble(_header(count=-1), GOOD_FRAME), ViewError, "'count' is -1"),
    ("crc range", assemble(_header(rows_crc32c=2**32), GOOD_FRAME), ViewError, "not a u32"),
    ("balance", assemble(_header(balance="size"), GOOD_FRAME), ViewError, "balance 'size'"),
    ("name", assemble(_header(name="../x"), GOOD_FRAME), ViewError, "a view name is"),
    ("not zstd", assemble(_header(), b"\x00" * 12), ViewError, "not a zstd frame"),
    ("bitmap size", assemble(_header(), _frame(GOOD_BITMAP + b"\x00")), ViewError,
     "declares 4 bytes, expected 3 bytes"),
    ("after frame", assemble(_header(), GOOD_FRAME + b"x"), ViewError,
     "1 bytes after the bitmap's zstd frame"),
    ("checksum", assemble(_header(), _frame(_flipped_bitmap())), ChecksumMismatchError,
     "the bitmap's CRC-32C is"),
    ("count", assemble(_header(count=5), GOOD_FRAME), ViewError,
     "the header counts 5 rows, the bitmap holds 6"),
    ("padding bits",
     assemble(_header(num_samples=18, rows_crc32c=crc32c_extend(0, GOOD_BITMAP[:2] + b"\x08")),
              _frame(GOOD_BITMAP[:2] + b"\x08")),
     ViewError, "bits set past row 17"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [pytest.param(d, e, m, id=name) for name, d, e, m in HOSTILE],
)
def test_malformed_files_name_the_file(
    tmp_path: Path, data: bytes, error: type[FastpackError], message: str
) -> None:
    path = tmp_path / "bad.fpview"
    path.write_bytes(data)
    with pytest.raises(error, match=message) as caught:
        read_view_file(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert isinstance(caught.value, FastpackError)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(DatasetNotFoundError, match=r"nope\.fpview: view file not found"):
        read_view_file(tmp_path / "nope.fpview")


def test_atomic_write_keeps_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "train.fpview"
    old = make_view()
    write_view_file(path, old)
    before = path.read_bytes()

    def fail(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(OSError, match="No space left"):
        write_view_file(path, make_view([0]))
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.fpview"]  # no temporary left


def test_failed_encoding_leaves_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fastpack.formats.view as view_module  # noqa: PLC0415 -- under test: the module the test patches

    def fail(view: View) -> bytes:
        raise RuntimeError("interrupted")

    monkeypatch.setattr(view_module, "view_to_bytes", fail)
    with pytest.raises(RuntimeError):
        write_view_file(tmp_path / "v" / "train.fpview", make_view())
    assert list((tmp_path / "v").iterdir()) == []
