"""`fastpack build --schema` and `fastpack info` on a multi-field dataset."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from fastpack.formats import read_manifest
from fastpack.formats.manifest import manifest_from_text

from fastpack.sizes import format_size
from tests.compiler._fields import sample_values, write_files, write_jsonl, write_schema
from tests.compiler.test_fields_zstd import SCHEMA, captions_list
from tests.s3_server import S3Server

from .conftest import Run


def test_build_with_a_schema_then_info(tmp_path: Path, run: Run) -> None:
    samples = [sample_values(i) for i in range(12)]
    write_files(tmp_path / "src", samples)
    listing = write_jsonl(tmp_path / "src" / "list.jsonl", samples)
    fields = json.loads(write_schema(tmp_path / "schema.json").read_text())["fields"]
    fields[2] = {"name": "txt.zst", "type": "text", "column": "caption",
                 "zstd": {"level": 9, "dictionary": True}}  # fmt: skip
    schema = write_schema(tmp_path / "schema.json", fields)
    out = tmp_path / "ds"
    code, printed, _ = run(
        "build", listing, out, "--schema", schema, "--dictionary-size", "4KiB", "--workers", "1",
        "--no-progress",
    )  # fmt: skip
    assert code == 0, printed
    manifest = read_manifest(out / "fastpack.json")
    assert manifest.build["dictionary_size"] == 4096
    assert manifest.build["dictionaries"] == {
        "txt.zst": "too few samples to train: frames without one"
    }

    code, printed, _ = run("info", out)
    assert code == 0
    lines = printed.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("schema"))
    assert lines[at : at + len(fields)] == [
        "schema    jpg        jpeg",
        "          cls        class",
        "          txt.zst    text, zstd level 9, no dictionary",
        "          ids.json   class_ids",
        "          boxes.npy  ndarray <f4 (N, 4), geometry boxes",
        "          meta.json  json",
        "          seg.png    png, geometry mask",
        "          note.txt   text, optional",
    ]
    code, printed, _ = run("info", out, "--json")
    assert json.loads(printed)["schema"] == manifest.schema.to_json()


def test_info_of_a_trained_dictionary(tmp_path: Path, run: Run) -> None:
    listing = captions_list(tmp_path / "src")
    schema = write_schema(tmp_path / "schema.json", SCHEMA.to_json()["fields"])
    code, _, err = run("build", listing, tmp_path / "ds", "--schema", schema, "--no-progress")
    assert code == 0, err
    _, printed, _ = run("info", tmp_path / "ds")
    d = read_manifest(tmp_path / "ds" / "fastpack.json").schema["txt.zst"].zstd
    assert d is not None
    assert d.dictionary is not None
    size = format_size(d.dictionary.bytes)
    assert f"txt.zst        text, zstd level 7, dictionary {size}" in printed
    assert "schema=3 fields" in printed  # the build line does not repeat the schema


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (None, "schema file not found"),
        ("[{", "not valid JSON"),
        ("[]", "expected a non-empty list of fields"),
        ('[{"name": "jpg", "type": "gif"}]', "field 0: field 'jpg': type 'gif'"),
        ('{"fields": [{"name": "a"}], "extra": 1}', "unknown keys ['extra']"),
    ],
)
def test_schema_errors_name_the_file(
    tmp_path: Path, run: Run, text: str | None, message: str
) -> None:
    source = tmp_path / "list.csv"
    source.write_text("a.jpg,1\n")
    schema = tmp_path / "schema.json"
    if text is not None:
        schema.write_text(text)
    code, _, err = run("build", source, tmp_path / "ds", "--schema", schema, "--no-progress")
    assert code == 1
    (line,) = err.strip().splitlines()
    assert line.startswith(f"fastpack: error: {schema}")
    assert message in line


def test_bad_dictionary_size(run: Run) -> None:
    code, _, err = run("build", "s", "o", "--dictionary-size", "12XB")
    assert code == 2
    assert "invalid size '12XB'" in err
    code, _, err = run("build", "s", "o", "--dictionary-size", "100", "--no-progress")
    assert code == 1
    assert "dictionary_size=100: expected >= 256" in err


def test_build_to_a_url_publishes_the_dictionaries(
    tmp_path: Path, run: Run, s3_env: S3Server, s3_bucket: str
) -> None:
    listing = captions_list(tmp_path / "src")
    schema = write_schema(tmp_path / "schema.json", SCHEMA.to_json()["fields"])
    url = f"s3://{s3_bucket}/ds"
    code, _, err = run(
        "build", listing, url, "--schema", schema, "--no-progress", "--staging", tmp_path / "st"
    )
    assert code == 0, err
    fs = s3_env.filesystem()
    dictionary = fs.cat_file(f"{s3_bucket}/ds/dicts/txt.zst.zdict")
    manifest = manifest_from_text(fs.cat_file(f"{s3_bucket}/ds/fastpack.json"), url)
    d = manifest.schema["txt.zst"].zstd
    assert d is not None
    assert d.dictionary is not None
    assert d.dictionary.sha256 == hashlib.sha256(dictionary).hexdigest()
