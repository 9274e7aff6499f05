"""verify_dataset and verify_remote on version-2 datasets (the golden v2 samples: every field type,
an optional field, zstd with a dictionary): a clean one passes; damaged members, dictionaries and
absent markers are named problems, the same locally and at a URL."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from fastpack.formats import ABSENT, DatasetFiles
from fastpack.reader import verify_dataset, verify_remote

from tests.formats._golden_v2 import NUM_SAMPLES, png_gray, write_golden_v2

from ..conftest import refresh_manifest, section

DICTIONARY = "dicts/caption.txt.zst.zdict"


@pytest.fixture
def v2(tmp_path: Path) -> Path:
    root = tmp_path / "v2"
    write_golden_v2(root)
    return root


def _member(root: Path, row: int, field: str) -> tuple[Path, int, int]:
    """(shard path, offset, size) of sample `row`'s member `field`."""
    files = DatasetFiles(root)
    shard = int(files.index.shard[row])
    return (
        files.shard_path(shard),
        int(files.index.offsets(field)[row]),
        int(files.index.sizes(field)[row]),
    )


def _stem(root: Path, field: str) -> str:
    """The index's section stem of `field` (`f<position>` in version 2)."""
    return f"f{DatasetFiles(root).manifest.schema.position(field)}"


def _replace_member(root: Path, row: int, field: str, data: bytes) -> None:
    """Overwrite sample `row`'s `field` member with `data` (of its size) and record its CRC, as
    if it had been written so."""
    path, offset, size = _member(root, row, field)
    assert len(data) == size
    raw = bytearray(path.read_bytes())
    raw[offset : offset + size] = data
    path.write_bytes(bytes(raw))
    crcs = section(root, f"{_stem(root, field)}.crc32")
    crcs[row] = zlib.crc32(data)
    crcs.flush()
    del crcs
    refresh_manifest(root)


def test_clean_v2_dataset(v2: Path) -> None:
    report = verify_dataset(v2, decode=True)
    assert report.ok, report.format()
    assert (report.samples_checked, report.shards_checked) == (NUM_SAMPLES, 2)


def damaged_member(root: Path) -> None:
    path, offset, size = _member(root, 2, "caption.txt.zst")
    raw = bytearray(path.read_bytes())
    raw[offset + size - 1] ^= 0x01
    path.write_bytes(bytes(raw))


def damaged_dictionary(root: Path) -> None:
    raw = bytearray((root / DICTIONARY).read_bytes())
    raw[100] ^= 0xFF
    (root / DICTIONARY).write_bytes(bytes(raw))


def missing_dictionary(root: Path) -> None:
    (root / DICTIONARY).unlink()


def frame_that_does_not_decompress(root: Path) -> None:
    _, _, size = _member(root, 3, "caption.txt.zst")
    _replace_member(root, 3, "caption.txt.zst", b"\x28\xb5\x2f\xfd" + b"\xff" * (size - 4))


def absent_from_a_required_field(root: Path) -> None:
    for suffix, value in (("offset", ABSENT), ("size", 0), ("crc32", 0)):
        column = section(root, f"{_stem(root, 'txt')}.{suffix}")
        column[1] = value
        column.flush()
        del column
    refresh_manifest(root)


def absent_marker_with_a_size(root: Path) -> None:
    sizes = section(root, f"{_stem(root, 'meta.json.zst')}.size")
    sizes[3] = 5
    sizes.flush()
    del sizes
    refresh_manifest(root)


def class_ids_that_are_not_integers(root: Path) -> None:
    _replace_member(root, 1, "tags.json", b"[.]")


def mask_of_another_size(root: Path) -> None:
    """An 8 x 33 mask beside a 16 x 16 image: a PNG of the same length (stored deflate)."""
    _replace_member(root, 5, "seg.png", png_gray(np.full((8, 33), 2, np.uint8)))


def test_damaged_member(v2: Path) -> None:
    damaged_member(v2)
    path, _, _ = _member(v2, 2, "caption.txt.zst")
    problems = verify_dataset(v2).problems
    assert len(problems) == 2, problems
    assert problems[0].startswith(f"{path}: sha256 ")
    assert problems[1].startswith(
        f"{path}: sample 2 (key 000000002) field 'caption.txt.zst': crc32 "
    )


def test_damaged_dictionary(v2: Path) -> None:
    damaged_dictionary(v2)
    problems = verify_dataset(v2, decode=True).problems
    assert len(problems) == 1, problems
    assert problems[0].startswith(
        f"{v2 / DICTIONARY}: zstd dictionary of field 'caption.txt.zst': sha256 "
    )
    assert "the schema records" in problems[0]


def test_missing_dictionary(v2: Path) -> None:
    missing_dictionary(v2)
    assert verify_dataset(v2, decode=True).problems == [
        f"{v2 / DICTIONARY}: zstd dictionary of field 'caption.txt.zst' not found"
    ]


def test_compressed_members_must_decompress(v2: Path) -> None:
    frame_that_does_not_decompress(v2)
    path, _, _ = _member(v2, 3, "caption.txt.zst")
    assert verify_dataset(v2).problems == [
        f"{path}: sample 3 (key 000000003) field 'caption.txt.zst': does not decode (zstd frame "
        "does not decompress (error determining content size from frame header))"
    ]


def test_absent_from_a_required_field(v2: Path) -> None:
    absent_from_a_required_field(v2)
    path, _, _ = _member(v2, 1, "jpg")
    problems = verify_dataset(v2).problems
    assert len(problems) == 2, problems
    assert problems[0].startswith(f"{path.with_suffix('.idx')}: sample 1 lists [")
    assert problems[1] == (
        f"{path}: sample 1 (key 000000001) field 'txt': marked absent, but the field is not "
        "optional"
    )


def test_absent_marker_with_a_size(v2: Path) -> None:
    absent_marker_with_a_size(v2)
    path, _, _ = _member(v2, 3, "jpg")
    assert verify_dataset(v2).problems == [
        f"{path}: sample 3 (key 000000003) field 'meta.json.zst': marked absent with size 5 and "
        "crc32 00000000, expected 0 and 0"
    ]


def test_decode_checks_values_against_the_schema(v2: Path) -> None:
    class_ids_that_are_not_integers(v2)
    mask_of_another_size(v2)
    assert verify_dataset(v2).ok
    problems = verify_dataset(v2, decode=True).problems
    assert len(problems) == 2, problems
    assert problems[0].endswith(
        "sample 1 (key 000000001) field 'tags.json': does not decode (a class_ids member that "
        "does not decode (Expecting value: line 1 column 2 (char 1)))"
    )
    assert problems[1].endswith(
        "sample 5 (key 000000005) field 'seg.png': does not decode (a mask of 8x33 pixels, its "
        "image is 16x16)"
    )


@pytest.mark.parametrize(
    "damage",
    [None, damaged_member, damaged_dictionary, missing_dictionary, frame_that_does_not_decompress,
     absent_from_a_required_field, absent_marker_with_a_size, class_ids_that_are_not_integers,
     mask_of_another_size],
    ids=lambda d: d.__name__ if d else "clean",
)  # fmt: skip
def test_remote_reports_what_local_reports(
    v2: Path, publish: Callable[[Path], str], damage: Callable[[Path], None] | None
) -> None:
    if damage is not None:
        damage(v2)
    url = publish(v2)
    local = verify_dataset(v2, decode=True)
    remote = verify_remote(url, decode=True, chunk_bytes=1000)
    assert local.ok is (damage is None), local.format()
    assert remote.problems == [p.replace(str(v2), url) for p in local.problems]
    assert (remote.shards_checked, remote.samples_checked) == (
        local.shards_checked, local.samples_checked,
    )  # fmt: skip
