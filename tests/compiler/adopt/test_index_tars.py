"""`index_shards` over webdataset tars written by `webdataset.ShardWriter`: the dataset reads the
tars' samples as they are, not one byte of shard data is written, and a changed shard is found."""

from __future__ import annotations

import json
import os
import re
import tarfile
from pathlib import Path

import numpy as np
import pytest
from fastpack.compiler import (
    BuildOptions,
    IndexOptions,
    OutputError,
    SourceError,
    build,
    index_shards,
)
from fastpack.compiler.adopt.scan_tar import base_plus_ext
from fastpack.compiler.build_schema import parse_build_schema
from fastpack.formats import INDEX_NAME, DatasetFiles, read_manifest
from fastpack.reader import Dataset, StreamingDataset, verify_dataset
from webdataset.tariterators import base_plus_ext as wds_base_plus_ext

from fastpack.cli.main import main
from tests.conftest import jpeg_bytes

from .conftest import decode, digests, png_bytes_of, tar_members, write_tar, write_tars

ONE = IndexOptions(workers=1)


def _read_all(out: Path) -> dict[str, tuple[np.ndarray, int]]:
    """key -> (image, label) of every sample, read by the map-style Dataset."""
    index = DatasetFiles(out).index
    with Dataset(out) as ds:
        return {index.key(i): (ds[i][0], int(ds[i][1])) for i in range(len(ds))}


def test_tars_indexed_in_place_read_as_written(tars: Path, tmp_path: Path) -> None:
    before = digests(tars)
    out = tmp_path / "out"
    summary = index_shards([tars], out, IndexOptions(workers=2))
    assert (summary.samples, summary.shards, summary.rejected) == (12, 3, 0)
    assert digests(tars) == before  # the shards are untouched
    index_size = (out / INDEX_NAME).stat().st_size
    written = [p for p in out.rglob("*") if p.is_file()]
    assert all(p.stat().st_size <= index_size for p in written), written
    assert not any(p.suffix == ".tar" for p in written)
    manifest = read_manifest(out / "fastpack.json")
    assert (manifest.version, manifest.adopted, manifest.shard_root) == (3, True, "../tars")
    assert [s.name for s in manifest.shards] == [f"train-{k:06d}.tar" for k in range(3)]
    assert manifest.build == {"adopted": True, "source_kind": "wds"}
    assert manifest.schema.names == ("jpg", "cls", "txt")
    members = tar_members(tars)
    read = _read_all(out)
    assert sorted(read) == sorted(members)
    for key, (image, label) in read.items():
        np.testing.assert_array_equal(image, decode(members[key]["jpg"]))
        assert label == int(members[key]["cls"])
    with StreamingDataset(out) as streaming:
        streamed = sorted(int(label) for _, label in streaming)
    assert streamed == list(range(12))
    report = verify_dataset(out, decode=True)
    assert report.ok, report.format()


def test_index_beside_the_shards_records_no_shard_root(tars: Path) -> None:
    index_shards([tars], tars, ONE)
    manifest = read_manifest(tars / "fastpack.json")
    assert manifest.shard_root is None
    assert DatasetFiles(tars).shard_path(1) == tars / "train-000001.tar"
    assert verify_dataset(tars).ok


def test_shard_root_as_given(tars: Path, tmp_path: Path) -> None:
    out = tmp_path / "elsewhere" / "out"
    index_shards([tars], out, IndexOptions(workers=1, shard_root=str(tars)))
    assert read_manifest(out / "fastpack.json").shard_root == str(tars)
    assert len(_read_all(out)) == 12


def test_rejects_are_listed_and_shards_untouched(tmp_path: Path) -> None:
    def extra(i: int) -> dict[str, bytes]:
        return {"txt": b"caption"}

    src = write_tars(tmp_path / "tars", 8, per_shard=4, extra=extra)
    path = src / "train-000000.tar"
    good = jpeg_bytes(32, 40, seed=0)
    write_tar(
        path,
        [
            ("a.jpg", good),
            ("a.cls", b"1"),
            ("a.txt", b"x"),
            ("b.jpg", good[: len(good) // 2]),  # cut off: no EOI
            ("b.cls", b"2"),
            ("b.txt", b"x"),
            ("c.jpg", good),  # no label member
            ("c.txt", b"x"),
            ("d.png", png_bytes_of(3)),  # an image that is not a JPEG
            ("d.cls", b"3"),
            ("d.txt", b"x"),
        ],
    )
    before = digests(src)
    out = tmp_path / "out"
    summary = index_shards([src], out, ONE)
    assert digests(src) == before
    assert (summary.inputs, summary.samples, summary.rejected) == (8, 5, 3)
    lines = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    by_path = {line["path"]: line for line in lines}
    assert set(by_path) == {"train-000000.tar#b", "train-000000.tar#c", "train-000000.tar#d"}
    assert "truncated" in by_path["train-000000.tar#b"]["reason"]
    assert by_path["train-000000.tar#c"] == {
        "path": "train-000000.tar#c",
        "field": "cls",
        "reason": "missing (a required field)",
    }
    assert by_path["train-000000.tar#d"]["reason"].startswith(
        "image is PNG; `fastpack index` keeps shards as they are, so only JPEG images can be "
        "indexed: use `fastpack build`"
    )
    index = DatasetFiles(out).index
    sources = [index.source(i) for i in range(index.num_samples)]
    assert sources[0] == "train-000000.tar#a"
    report = verify_dataset(out)
    assert report.ok, report.format()


def test_changed_shard_is_reported_by_verify(tars: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    index_shards([tars], out, ONE)
    shard = tars / "train-000001.tar"
    data = bytearray(shard.read_bytes())
    data[-3000] ^= 0xFF  # inside the last sample's caption or padding
    shard.write_bytes(bytes(data))
    report = verify_dataset(out)
    assert not report.ok
    assert any(str(shard) in p and "sha256" in p for p in report.problems), report.problems


def test_truncated_tar_keeps_its_whole_samples(tars: Path, tmp_path: Path) -> None:
    shard = tars / "train-000002.tar"
    members = list(_member_spans(shard))
    _, offset, _ = members[-1]  # the last sample's caption: cut inside its data
    shard.write_bytes(shard.read_bytes()[: offset + 2])
    out = tmp_path / "out"
    summary = index_shards([tars], out, ONE)
    assert (summary.samples, summary.rejected) == (11, 1)
    (line,) = (out / "rejects.jsonl").read_text().splitlines()
    entry = json.loads(line)
    assert entry["path"] == "train-000002.tar#sample0011"
    assert re.search(r"cut off at byte \d+, inside member 'sample0011\.txt'", entry["reason"])
    assert summary.notes
    assert "train-000002.tar" in summary.notes[0]
    assert verify_dataset(out).ok


def _member_spans(path: Path) -> list[tuple[str, int, int]]:
    with tarfile.open(path) as tar:
        return [(m.name, m.offset_data, m.size) for m in tar]


def test_class_names_from_label_text_and_from_a_class_list(tmp_path: Path) -> None:
    names = ["dog", "cat", "bird"]
    src = write_tars(tmp_path / "tars", 6, label=lambda i: names[i % 3].encode())
    out = tmp_path / "out"
    index_shards([src], out, ONE)
    files = DatasetFiles(out)
    assert files.manifest.classes == ("bird", "cat", "dog")  # sorted, as a build numbers them
    assert files.index.label.tolist() == [2, 1, 0, 2, 1, 0]
    assert verify_dataset(out).ok
    given = tmp_path / "given"
    index_shards([src], given, IndexOptions(workers=1, classes=("cat", "dog")))
    files = DatasetFiles(given)
    assert files.manifest.classes == ("cat", "dog")
    assert files.index.label.tolist() == [1, 0, 1, 0]
    lines = (given / "rejects.jsonl").read_text().splitlines()
    assert len(lines) == 2
    assert "'bird' is not among the 2 names of --classes" in lines[0]


def test_a_schema_names_the_fields_indexed(tars: Path, tmp_path: Path) -> None:
    schema = parse_build_schema(
        [{"name": "jpg", "type": "jpeg"}, {"name": "cls", "type": "class"}], "schema"
    )
    out = tmp_path / "out"
    index_shards([tars], out, IndexOptions(workers=1, schema=schema))
    manifest = read_manifest(out / "fastpack.json")
    assert manifest.schema.names == ("jpg", "cls")
    text = (out / "shards" / "000000.idx").read_text().splitlines()
    assert text[0] == "v1.2 5"
    assert text[1].split(" ")[0::4] == ["jpg", "cls"]
    assert verify_dataset(out).ok


def test_a_zstd_field_is_refused(tars: Path, tmp_path: Path) -> None:
    schema = parse_build_schema(
        [{"name": "jpg", "type": "jpeg"}, {"name": "txt.zst", "type": "text", "zstd": {}}], "s"
    )
    with pytest.raises(SourceError, match=r"zstd-compressed: `fastpack index` keeps members"):
        index_shards([tars], tmp_path / "out", IndexOptions(workers=1, schema=schema))


def test_an_out_holding_a_dataset_is_refused(tars: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    index_shards([tars], out, ONE)
    with pytest.raises(OutputError, match="holds a dataset already"):
        index_shards([tars], out, ONE)


def test_pax_and_long_names(tmp_path: Path) -> None:
    src = tmp_path / "tars"
    src.mkdir()
    long_dir = "d" * 120
    image = jpeg_bytes(24, 24, seed=7)
    pairs = [((f"{long_dir}/k{i}.jpg", image), (f"{long_dir}/k{i}.cls", b"%d" % i)) for i in (0, 1)]
    write_tar(src / "pax.tar", [m for pair in pairs for m in pair], tarfile.PAX_FORMAT)
    gnu = src / "xgnu.tar"
    write_tar(gnu, [(f"{long_dir}/g.jpg", image), (f"{long_dir}/g.cls", b"5")], tarfile.GNU_FORMAT)
    out = tmp_path / "out"
    summary = index_shards([src], out, ONE)
    assert (summary.samples, summary.rejected) == (3, 0)
    index = DatasetFiles(out).index
    assert [index.key(i) for i in range(3)] == [f"{long_dir}/k0", f"{long_dir}/k1", f"{long_dir}/g"]
    with Dataset(out) as ds:
        np.testing.assert_array_equal(ds[2][0], decode(image))
    assert verify_dataset(out).ok


@pytest.mark.parametrize(
    "name", ["a.jpg", "dir/a.b.c", "a", "x/y.z/w.jpg", ".hidden", "a..b", "dir.d/k.JPG"]
)
def test_members_split_as_webdataset_splits_them(name: str) -> None:
    assert base_plus_ext(name) == wds_base_plus_ext(name)


def test_fastpack_built_shards_indexed_elsewhere(make_image_folder: object, tmp_path: Path) -> None:
    source = make_image_folder(classes=3, per_class=3, size=40)  # type: ignore[operator]
    built = tmp_path / "built"
    build(source, built, BuildOptions(workers=1, shard_size=20_000, progress=False))
    out = tmp_path / "out"
    index_shards([built / "shards"], out, IndexOptions(workers=1, format="wds"))
    with Dataset(built) as a, Dataset(out) as b:
        assert len(a) == len(b)
        for i in range(len(a)):
            np.testing.assert_array_equal(a[i][0], b[i][0])
            assert int(a[i][1]) == int(b[i][1])
    assert read_manifest(out / "fastpack.json").shard_root == os.path.relpath(built / "shards", out)
    assert verify_dataset(out).ok


def test_cli_index_then_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = write_tars(tmp_path / "tars", 4, label=lambda i: b"cat" if i % 2 else b"dog")
    classes = tmp_path / "classes.txt"
    classes.write_text("dog\ncat\n")
    out = tmp_path / "out"
    argv = ["index", str(src), str(out), "--workers", "1", "--classes", str(classes)]
    assert main(argv) == 0
    assert "4 samples from 4 inputs in 1 shard " in capsys.readouterr().out
    assert DatasetFiles(out).index.label.tolist() == [0, 1, 0, 1]
    assert main(["verify", str(out)]) == 0
    assert main(["index", str(tmp_path / "none"), str(tmp_path / "o2")]) == 1
    assert "none: not found" in capsys.readouterr().err


def test_a_damaged_header_ends_the_shard(tars: Path, tmp_path: Path) -> None:
    shard = tars / "train-000000.tar"
    with tarfile.open(shard) as tar:
        header = next(m.offset for m in tar if m.name == "sample0002.jpg")
    data = bytearray(shard.read_bytes())
    data[header + 3] ^= 0x01  # a name byte: the checksum no longer matches
    shard.write_bytes(bytes(data))
    out = tmp_path / "out"
    summary = index_shards([tars], out, ONE)
    assert (summary.samples, summary.rejected) == (12 - 3, 1)
    (line,) = (out / "rejects.jsonl").read_text().splitlines()
    entry = json.loads(line)
    # ShardWriter writes a sample's members in name order: its cls member came first
    assert entry["path"] == "train-000000.tar#sample0002"  # the sample in progress
    assert f"byte {header} is not a valid tar member header" in entry["reason"]


def test_ustar_names_with_a_prefix(tmp_path: Path) -> None:
    src = tmp_path / "tars"
    src.mkdir()
    folder = "/".join(["part"] * 20)  # 99 bytes: the name goes to USTAR's prefix field
    image = jpeg_bytes(24, 24, seed=3)
    write_tar(src / "u.tar", [(f"{folder}/key.jpg", image), (f"{folder}/key.cls", b"1")])
    out = tmp_path / "out"
    assert index_shards([src], out, ONE).samples == 1
    assert DatasetFiles(out).index.key(0) == f"{folder}/key"
