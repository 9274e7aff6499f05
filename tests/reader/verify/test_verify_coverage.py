"""verify covers every byte a reader trusts (formats/SPEC.md section 9): the manifest's own
bytes and its fields against what they describe, each DALI index's bytes, the rejects file and
the views beside the dataset (or anywhere, `verify_view` and `fastpack verify --view`). Each
hostile file is named in the problem, with what is wrong."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Literal

import pytest
from fastpack.compiler import BuildOptions, build
from fastpack.formats import (
    MANIFEST_NAME,
    Index,
    Manifest,
    View,
    read_manifest,
    read_view_file,
    write_manifest,
    write_view_file,
)
from fastpack.formats.manifest import manifest_digest
from fastpack.formats.view import VIEW_MAGIC as MAGIC
from fastpack.formats.view import view_to_bytes
from fastpack.reader import verify_dataset, verify_remote, verify_view

from fastpack.cli import main

from ..conftest import refresh_manifest, section

SAMPLES = 12


@pytest.fixture
def make(make_image_folder: Callable[..., Path], tmp_path: Path) -> Callable[..., Path]:
    """Factory: an ImageFolder of 12 JPEGs and one broken file (a reject), built into a
    dataset in tar or TFRecord shards, with a view `train` beside it."""

    def build_one(shard_format: Literal["tar", "tfrecord"] = "tar") -> Path:
        source = make_image_folder(classes=3, per_class=4, name=f"src-{shard_format}")
        (source / "class_01" / "broken.jpg").write_bytes(b"\xff\xd8 not a JPEG")
        out = tmp_path / f"ds-{shard_format}"
        options = BuildOptions(
            workers=1, shard_size=24_000, progress=False, shard_format=shard_format
        )
        build(source, out, options)
        assert main(["view", str(out), "train", "--fraction", "0.5"]) == 0
        return out

    return build_one


@pytest.fixture
def built(make: Callable[..., Path]) -> Path:
    return make()


def rewrite(root: Path, **changes: object) -> Manifest:
    """The manifest with `changes`, written as a writer writes it, and the views beside it made
    for it again: a consistent edit (its own SHA-256 recomputed), which only the checks of its
    fields can find."""
    manifest = replace(read_manifest(root / MANIFEST_NAME), **changes)  # type: ignore[arg-type]
    write_manifest(root / MANIFEST_NAME, manifest)
    for path in (root / "views").glob("*.fpview"):
        view = read_view_file(path)
        write_view_file(path, replace(view, dataset=manifest_digest(manifest)))
    return manifest


def edit_bytes(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert old in data, old
    path.write_bytes(data.replace(old, new, 1))


def test_clean_dataset_checks_its_view(built: Path) -> None:
    report = verify_dataset(built)
    assert report.ok, report.format()
    assert report.views_checked == 1
    assert report.format() == f"{built}: OK; 5 shard(s), 12 sample(s), 1 view(s) checked"
    manifest = json.loads((built / MANIFEST_NAME).read_text())
    assert {"sha256", "rejects"} <= set(manifest)
    assert all({"index_bytes", "index_sha256"} <= set(s) for s in manifest["shards"])


# The manifest: its own bytes


def test_a_changed_class_name_is_found(built: Path) -> None:
    edit_bytes(built / MANIFEST_NAME, b'"class_01"', b'"class_0l"')
    problems = verify_dataset(built).problems
    assert re.fullmatch(
        f"ChecksumMismatchError: {built / MANIFEST_NAME}: its content's sha256 is [0-9a-f]{{64}}, "
        "it records [0-9a-f]{64}: the file is damaged",
        problems[0],
    ), problems
    # every view of the dataset is now refused: the manifest digest changed
    assert any(p.startswith("ViewMismatchError: ") and "train.fpview" in p for p in problems)


def test_a_whitespace_change_in_the_manifest_is_found(built: Path) -> None:
    edit_bytes(built / MANIFEST_NAME, b'\n  "classes"', b'\n \t"classes"')
    problems = verify_dataset(built).problems
    at = (built / MANIFEST_NAME).read_bytes().index(b"\t")
    assert problems[0] == (
        f"ManifestError: {built / MANIFEST_NAME}: not the canonical text of what it holds; byte "
        f"{at} (line 11, column 2) is b'\\t\"classes\": ', the canonical text has "
        "b' \"classes\": '"
    )


def test_a_class_name_against_the_source_folders(built: Path) -> None:
    """A consistent edit (the manifest's SHA-256 recomputed): a dataset built from a folder
    keeps each class's samples in the class's folder."""
    rewrite(built, classes=("class_00", "class_0l", "class_02"))
    problems = verify_dataset(built).problems
    index = Index(built / "index.fpx")
    first = next(i for i in range(SAMPLES) if int(index.label[i]) == 1)
    assert problems[0] == (
        f"{built / 'index.fpx'}: sample {first} of class 1 ('class_0l') comes from "
        f"{index.source(first)!r}, not from the class's folder 'class_0l/'"
    )


def test_labels_outside_the_classes(built: Path) -> None:
    rewrite(built, classes=("class_00", "class_01"))
    problems = verify_dataset(built).problems
    first = next(i for i in range(SAMPLES) if int(Index(built / "index.fpx").label[i]) == 2)
    assert problems[0] == (
        f"{built / 'index.fpx'}: sample {first} has label 2, the manifest names 2 classes "
        "(labels 0 to 1)"
    )


def test_key_width_against_the_keys(built: Path) -> None:
    rewrite(built, key_width=8)
    assert verify_dataset(built).problems == [
        f"{built / 'index.fpx'}: sample 0 has key '000000000' (9 bytes), the manifest's "
        "key_width is 8"
    ]


def test_keys_that_go_back_or_repeat(built: Path) -> None:
    blob = section(built, "key.blob")
    blob[9:18] = blob[0:9]  # sample 1 takes sample 0's key, in the same shard
    blob.flush()
    del blob
    refresh_manifest(built)
    problems = verify_dataset(built).problems
    assert problems[0] == (
        f"{built / 'index.fpx'}: sample 1 has key 0 after 0 in the same shard 0; keys increase "
        "within a shard"
    )
    blob = section(built, "key.blob")
    blob[9:18] = memoryview(b"000000001")
    blob[-9:] = memoryview(b"000000001")  # the last sample, in the last shard
    blob.flush()
    del blob
    refresh_manifest(built)
    problems = verify_dataset(built).problems
    assert f"{built / 'index.fpx'}: samples 1 and {SAMPLES - 1} have the same key 1" in problems


def test_a_key_that_is_not_digits(built: Path) -> None:
    blob = section(built, "key.blob")
    blob[9 * 3 + 4] = ord("x")
    blob.flush()
    del blob
    refresh_manifest(built)
    problems = verify_dataset(built).problems
    assert problems[0] == (
        f"{built / 'index.fpx'}: sample 3 has key '0000x0003', expected 9 ASCII digits"
    )


def test_a_shard_crc32c_against_the_shard(built: Path) -> None:
    manifest = read_manifest(built / MANIFEST_NAME)
    shard = manifest.shards[1]
    assert shard.crc32c is not None
    shards = list(manifest.shards)
    shards[1] = replace(shard, crc32c=shard.crc32c ^ 1)
    rewrite(built, shards=tuple(shards))
    assert verify_dataset(built).problems == [
        f"{built / shard.name}: crc32c {shard.crc32c}, the manifest records "
        f"{shard.crc32c ^ 1} (its sha256 matches)"
    ]


def test_shard_names_and_stats(built: Path) -> None:
    manifest = read_manifest(built / MANIFEST_NAME)
    shards = list(manifest.shards)
    shards[0] = replace(shards[0], index_name="shards/000000.idx2")
    (built / "shards/000000.idx").rename(built / "shards/000000.idx2")
    stats = {**manifest.stats, "samples": 11, "payload_bytes": 5}
    rewrite(built, shards=tuple(shards), stats=stats)
    problems = verify_dataset(built).problems
    name = built / MANIFEST_NAME
    assert problems[:3] == [
        f"{name}: shard 0 is named 'shards/000000.tar' with DALI index 'shards/000000.idx2', "
        "expected 'shards/000000.tar' and 'shards/000000.idx'",
        f"{name}: stats.samples is 11, num_samples 12",
        problems[2],
    ]
    assert re.fullmatch(
        f"{name}: stats.payload_bytes is 5, the index's members hold \\d+ bytes", problems[2]
    )


# DALI indexes


@pytest.mark.parametrize("shard_format", ["tar", "tfrecord"])
def test_a_whitespace_swap_in_a_dali_index(make: Callable[..., Path], shard_format: str) -> None:
    """What DALI refuses and a parser splitting on whitespace takes: found by the index's
    SHA-256 and by its text, also for a manifest that records no SHA-256 of it."""
    root = make(shard_format)
    idx = root / "shards/000001.idx"
    edit_bytes(idx, b" ", b"\t")
    problems = verify_dataset(root).problems
    assert problems[0].startswith(f"{idx}: sha256 ")
    assert problems[0].endswith(", the manifest records " + problems[0].split()[-1])
    data = idx.read_bytes()
    at = data.index(b"\t")
    line, column = data.count(b"\n", 0, at) + 1, at - data.rfind(b"\n", 0, at)
    assert problems[1].startswith(
        f"{idx}: not the text a writer writes for what it lists; byte {at} (line {line}, "
        f"column {column}) is b'\\t"
    ), problems
    manifest = read_manifest(root / MANIFEST_NAME)
    older = tuple(replace(s, index_bytes=None, index_sha256=None) for s in manifest.shards)
    rewrite(root, shards=older)
    assert verify_dataset(root).problems == problems[1:]
    edit_bytes(idx, b"\n", b"\x0b")
    assert len(verify_dataset(root).problems) == 1


# The rejects


def test_rejects_are_checked(built: Path) -> None:
    rejects, listed = built / "rejects.jsonl", read_manifest(built / MANIFEST_NAME).rejects
    line = rejects.read_text()
    assert line.startswith('{"path": "class_01/broken.jpg", "reason": ')
    edit_bytes(rejects, b'": "', b'":\t"')
    problems = verify_dataset(built).problems
    assert re.fullmatch(
        f"{rejects}: sha256 [0-9a-f]{{64}}, the manifest records [0-9a-f]{{64}}", problems[0]
    )
    assert problems[1] == (
        f"{rejects}: line 1: not written as writers write it; byte 8 (line 1, column 9) is "
        "b'\\t\"class_01/b', the canonical text has b' \"class_01/b'"
    )
    rejects.write_text(line + line)
    rewrite(built, rejects=None)
    assert verify_dataset(built).problems == [
        f"{rejects}: not listed in the manifest, which lists every file it records",
        f"{rejects}: 2 lines, the manifest's stats.rejected is 1",
    ]
    rewrite(built, rejects=listed)
    rejects.write_text('{"path": 3, "reason": "x"}\n')
    assert verify_dataset(built).problems[1:] == [
        f"{rejects}: line 1: a value that is not a string"
    ]
    rejects.unlink()
    assert verify_dataset(built).problems == [f"{rejects}: file not found; the manifest lists it"]


# Views


def test_a_changed_byte_in_a_view_beside_the_dataset(built: Path) -> None:
    path = built / "views/train.fpview"
    data = bytearray(path.read_bytes())
    data[30] ^= 0x01  # inside the header's JSON
    path.write_bytes(bytes(data))
    problems = verify_dataset(built).problems
    assert len(problems) == 1
    assert re.fullmatch(
        f"ChecksumMismatchError: {path}: the file's CRC-32C is [0-9a-f]{{8}}, its last 4 bytes "
        "record [0-9a-f]{8}: the file is damaged or cut short",
        problems[0],
    )


def test_a_view_named_otherwise_or_made_for_another_dataset(built: Path) -> None:
    view = read_view_file(built / "views/train.fpview")
    (built / "views/train.fpview").rename(built / "views/val.fpview")
    write_view_file(built / "views/other.fpview", replace(view, name="other", dataset="ab" * 32))
    problems = verify_dataset(built).problems
    assert problems[0].startswith(
        f"ViewMismatchError: {built / 'views/other.fpview'}: view 'other' was made for another "
        "dataset (manifest digest abababababababab..., 12 samples)"
    )
    assert problems[1:] == [
        f"{built / 'views/val.fpview'}: the view is named 'train', its file 'val.fpview'"
    ]


def _version_1(view: View, header_text: bytes | None = None) -> bytes:
    """The version-1 file of `view` (no checksum of the file), its header text replaced."""
    data = view_to_bytes(view)[:-4]
    size = int.from_bytes(data[12:16], "little")
    header = data[16 : 16 + size] if header_text is None else header_text
    return (
        MAGIC
        + (1).to_bytes(4, "little")
        + len(header).to_bytes(4, "little")
        + header
        + data[16 + size :]
    )


def test_version_1_views_are_checked_as_far_as_they_can_be(built: Path) -> None:
    path = built / "views/train.fpview"
    view = read_view_file(path)
    path.write_bytes(_version_1(view))
    assert verify_dataset(built).ok
    header = path.read_bytes()[16 : 16 + int.from_bytes(path.read_bytes()[12:16], "little")]
    spaced = json.dumps(json.loads(header), sort_keys=True).encode()  # ", " and ": "
    path.write_bytes(_version_1(view, spaced))
    problems = verify_dataset(built).problems
    assert len(problems) == 1
    assert problems[0].startswith(
        f"ViewError: {path}: the header is not the canonical text of what it holds (keys "
        'sorted, no whitespace): b\'{"balance": null, '
    )


def test_verify_view_checks_a_view_lying_anywhere(built: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.fpview"
    elsewhere.write_bytes((built / "views/train.fpview").read_bytes())
    report = verify_view(built, [elsewhere])
    assert report.ok, report.format()
    assert report.format() == f"{built}: OK; 1 view(s) checked"
    assert main(["verify", str(built), "--view", str(elsewhere)]) == 0
    data = bytearray(elsewhere.read_bytes())
    data[-10] ^= 0x80  # inside the bitmap's frame
    elsewhere.write_bytes(bytes(data))
    gone = tmp_path / "gone.fpview"
    report = verify_view(built, [elsewhere, gone])
    assert report.problems[0].startswith(f"ChecksumMismatchError: {elsewhere}: the file's CRC-32C")
    assert report.problems[1:] == [f"{gone}: view file not found"]
    assert main(["verify", str(built), "--view", str(elsewhere)]) == 1


def test_verify_view_checks_the_manifest_the_view_names(built: Path, tmp_path: Path) -> None:
    edit_bytes(built / MANIFEST_NAME, b'"class_02"', b'"class_2"')
    report = verify_view(built, [built / "views/train.fpview"])
    assert report.problems[0].startswith(f"ChecksumMismatchError: {built / MANIFEST_NAME}: ")
    assert report.problems[1].startswith("ViewMismatchError: ")


# At a URL: what local reports


def test_remote_reports_the_same(built: Path, publish: Callable[[Path], str]) -> None:
    manifest = read_manifest(built / MANIFEST_NAME)
    shards = list(manifest.shards)
    assert shards[2].crc32c is not None
    shards[2] = replace(shards[2], crc32c=shards[2].crc32c ^ 2)
    rewrite(built, shards=tuple(shards), key_width=10)
    edit_bytes(built / "shards/000001.idx", b" ", b"\t")
    edit_bytes(built / "rejects.jsonl", b'": "', b'":  "')
    data = bytearray((built / "views/train.fpview").read_bytes())
    data[20] ^= 0x04
    (built / "views/train.fpview").write_bytes(bytes(data))
    local = verify_dataset(built)
    assert len(local.problems) == 7, local.format()
    url = publish(built)
    for chunk_bytes in (700, 1 << 20):
        remote = verify_remote(url, chunk_bytes=chunk_bytes)
        assert remote.problems == [p.replace(str(built), url) for p in local.problems]
        assert remote.views_checked == local.views_checked == 1
    view_url = f"{url}/views/train.fpview"
    at_url = verify_view(url, [view_url])
    assert at_url.problems == [local.problems[3].replace(str(built), url)]
