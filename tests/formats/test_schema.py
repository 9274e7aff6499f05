"""The sample schema: what a field may declare, and the named error for everything else, whether
built in code (`FieldSpec`) or parsed from a manifest (`parse_field`, `manifest_from_text`)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastpack.formats import ManifestError, Schema, Zstd
from fastpack.formats.manifest import manifest_from_text, version_for
from fastpack.formats.schema import (
    V1_SCHEMA,
    Dictionary,
    dictionary_name,
    parse_field,
    parse_schema,
    type_of_extension,
)

from ._golden_v2 import SCHEMA
from ._v2 import spec


def _dictionary(name: str) -> Dictionary:
    return Dictionary(name=name, bytes=10, sha256="0" * 64)


def test_every_golden_field_survives_json() -> None:
    for field in SCHEMA.fields:
        assert parse_field(json.loads(json.dumps(field.to_json())), "m.json") == field
    assert parse_schema(SCHEMA.to_json(), "m.json") == SCHEMA


def test_schema_lookups() -> None:
    schema = Schema(
        (spec("png", "png"), spec("cls", "class"), spec("jpg", "jpeg"), spec("id", "class"))
    )
    assert (schema.image_field, schema.label_field) == ("jpg", "cls")
    assert schema.names == ("png", "cls", "jpg", "id")
    assert schema.position("jpg") == 2
    assert "jpg" in schema
    assert "txt" not in schema
    with pytest.raises(KeyError, match=r"no field 'txt'; the schema's fields are \('png', 'cls'"):
        schema["txt"]
    assert Schema((spec("txt", "text"),)).image_field is None
    assert V1_SCHEMA.is_v1
    assert not schema.is_v1
    assert (version_for(V1_SCHEMA), version_for(schema)) == (1, 2)


def test_fixed_shape() -> None:
    assert spec("cls", "class").fixed_shape
    assert spec("a.npy", "ndarray", shape=(3, 4)).fixed_shape
    assert not spec("a.npy", "ndarray", shape=(None, 4)).fixed_shape
    assert not spec("a.npy", "ndarray").fixed_shape
    assert not spec("txt", "text").fixed_shape


@pytest.mark.parametrize(
    ("extension", "kind"),
    [("jpg", "jpeg"), ("seg.png", "png"), ("cls", "class"), ("x.npy", "ndarray"),
     ("txt", "text"), ("meta.json", "json"), ("bin", "raw"), ("txt.zst", "raw")],
)  # fmt: skip
def test_type_of_extension(extension: str, kind: str) -> None:
    assert type_of_extension(extension) == kind


def test_dictionary_name() -> None:
    assert dictionary_name("txt.zst") == "dicts/txt.zst.zdict"


@pytest.mark.parametrize(
    ("name", "kind", "options", "message"),
    [
        ("Jpg", "jpeg", {}, r"field 'Jpg': a field name is 1 to 40 characters of \[a-z0-9_\]"),
        ("", "jpeg", {}, "field '': a field name is"),
        ("seg..png", "png", {}, "field 'seg..png': a field name is"),
        (".png", "png", {}, "field '.png': a field name is"),
        ("a/b", "raw", {}, "field 'a/b': a field name is"),
        ("seg png", "raw", {}, "field 'seg png': a field name is"),
        ("a" * 41, "raw", {}, "a field name is 1 to 40 characters"),
        ("mp4", "video", {}, r"field 'mp4': type 'video', expected one of \('jpeg', 'png'"),
        ("txt", "text", {"dtype": "<f4"}, "dtype and shape belong to ndarray fields, not text"),
        ("txt", "text", {"shape": (3,)}, "dtype and shape belong to ndarray fields, not text"),
        ("a.npy", "ndarray", {"dtype": ">f4"}, r"dtype '>f4', expected one of \('\|b1'"),
        ("a.npy", "ndarray", {"dtype": "O"}, "dtype 'O', expected one of"),
        ("a.npy", "ndarray", {"dtype": "<U4"}, "dtype '<U4', expected one of"),
        ("a.npy", "ndarray", {"shape": (3, -1)}, r"shape \(3, -1\) has a dimension that is not"),
        ("a.npy", "ndarray", {"shape": (3, 1.5)}, r"shape \(3, 1.5\) has a dimension that is n"),
        ("a.npy", "ndarray", {"shape": (3, None)}, "only the first dimension may vary"),
        ("seg", "png", {"geometry": "polygon"}, r"geometry 'polygon', expected one of \('mask'"),
        ("seg.jpg", "jpeg", {"geometry": "mask"}, "field 'seg.jpg': a mask is a png field"),
        ("b.json", "json", {"geometry": "boxes"}, r"boxes are an ndarray field of shape \(N, 4\)"),
        ("b.npy", "ndarray", {"geometry": "boxes", "shape": (None, 5)}, "boxes are an ndarray"),
        ("txt", "text", {"classes": ("a",)}, "classes belong to class and class_ids fields"),
        ("jpg.zst", "jpeg", {"zstd": Zstd()}, "field 'jpg.zst': jpeg members are never recomp"),
        ("png.zst", "png", {"zstd": Zstd()}, "png members are never recompressed"),
        ("cls.zst", "class", {"zstd": Zstd()}, "class members are never recompressed"),
        ("txt", "text", {"zstd": Zstd()}, r"a zstd-compressed field's name ends in \.zst"),
        ("txt.zst", "text", {"zstd": Zstd(level=23)}, "zstd level 23, expected -7..22"),
        ("txt.zst", "text", {"zstd": Zstd(level=-8)}, "zstd level -8, expected -7..22"),
        ("txt.zst", "text", {}, r"field 'txt.zst': a name ending in \.zst needs zstd compression"),
        (
            "txt.zst", "text", {"zstd": Zstd(dictionary=_dictionary("dicts/other.zdict"))},
            r"dictionary 'dicts/other.zdict', expected 'dicts/txt.zst.zdict'",
        ),
    ],
)  # fmt: skip
def test_field_spec_errors(name: str, kind: str, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        spec(name, kind, **options)


def test_fields_that_are_fine() -> None:
    spec("boxes.npy", "ndarray", geometry="boxes")  # any shape until the spec says
    spec("boxes.npy", "ndarray", shape=(None, 4), dtype="<f4", geometry="boxes")
    spec("ids.json.zst", "class_ids", classes=("a", "b"), zstd=Zstd(level=-7))
    spec("txt.zst", "text", zstd=Zstd(dictionary=_dictionary("dicts/txt.zst.zdict")))
    spec("a.npy", "ndarray", shape=(), dtype="|b1")
    spec("a" * 40, "raw")


def test_schema_errors() -> None:
    with pytest.raises(ManifestError, match="schema: field 'jpg' appears twice"):
        Schema((spec("jpg", "jpeg"), spec("cls", "class"), spec("jpg", "jpeg")))
    with pytest.raises(ManifestError, match="schema: no fields"):
        Schema(())


def _field(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "txt.zst",
        "type": "text",
        "zstd": {"level": 3, "dictionary": None},
    }
    data.update(changes)
    return data


_DICT = {"name": "dicts/txt.zst.zdict", "bytes": 10, "sha256": "0" * 64}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "m.json: schema: expected an object, found list"),
        (_field(colour="red"), r"unknown keys \['colour'\]; known: \['classes', 'dtype'"),
        ({"type": "text"}, "m.json: schema: missing key 'name'"),
        ({"name": "txt"}, "m.json: schema: missing key 'type'"),
        (_field(name=7), "m.json: schema: 'name' should be str, found 7"),
        (_field(type=None), "m.json: schema: 'type' should be str, found None"),
        (_field(type="video"), "m.json: schema: field 'txt.zst': type 'video', expected one of"),
        (_field(optional="yes"), "'optional' should be bool, found 'yes'"),
        (_field(optional=1), "'optional' should be bool, found 1"),
        (_field(type="ndarray", dtype=4), "'dtype' should be str, found 4"),
        (_field(type="ndarray", shape=4), "'shape' should be a list of ints and nulls"),
        (_field(type="ndarray", shape=[True, 4]), "'shape' should be a list of ints and nulls"),
        (_field(type="ndarray", shape=["4"]), "'shape' should be a list of ints and nulls"),
        (_field(type="ndarray", shape=[-1]), r"shape \(-1,\) has a dimension that is not >= 0"),
        (_field(classes="ab"), "'classes' should be a list of strings"),
        (_field(type="class_ids", classes=[1]), "'classes' should be a list of strings"),
        (_field(geometry="mask"), "field 'txt.zst': a mask is a png field"),
        (_field(zstd=3), "'zstd' should be an object with level and dictionary"),
        (_field(zstd={"level": 3, "window": 10}), "'zstd' should be an object with level and"),
        (_field(zstd={"level": "3"}), "'level' should be int, found '3'"),
        (_field(zstd={"level": True}), "'level' should be int, found True"),
        (_field(zstd={"dictionary": "dicts/txt.zst.zdict"}), "zstd 'dictionary' should be an obj"),
        (_field(zstd={"dictionary": {"name": "dicts/txt.zst.zdict"}}), "dictionary misses 'bytes'"),
        (_field(zstd={"dictionary": {**_DICT, "bytes": "10"}}), "'bytes' should be int, found '1"),
        (_field(zstd={"dictionary": {**_DICT, "sha256": None}}), "'sha256' should be str, found N"),
        (_field(zstd={"dictionary": {**_DICT, "name": "x.zdict"}}), "dictionary 'x.zdict', expec"),
        (_field(name="txt"), "field 'txt': a zstd-compressed field's name ends in .zst"),
        (_field(zstd=None), r"field 'txt.zst': a name ending in \.zst needs zstd compression"),
    ],
)  # fmt: skip
def test_parse_field_errors(data: Any, message: str) -> None:
    with pytest.raises(ManifestError, match=message):
        parse_field(data, "m.json: schema")


def test_parse_field_defaults() -> None:
    parsed = parse_field(_field(zstd={}), "m.json")
    assert parsed.zstd == Zstd(level=3)
    assert parsed == parse_field(_field(zstd={"level": 3}, dtype=None, optional=False), "m.json")
    assert parse_field({"name": "a.npy", "type": "ndarray", "shape": [None, 2]}, "m").shape == (
        None, 2,
    )  # fmt: skip


def test_parse_schema_errors() -> None:
    with pytest.raises(ManifestError, match=r"m\.json: 'schema' should be a list, found dict"):
        parse_schema({"fields": []}, "m.json")
    with pytest.raises(ManifestError, match=r"m.json: schema\[1\]: missing key 'type'"):
        parse_schema([{"name": "jpg", "type": "jpeg"}, {"name": "cls"}], "m.json")
    twice = [{"name": "jpg", "type": "jpeg"}, {"name": "jpg", "type": "jpeg"}]
    with pytest.raises(ManifestError, match=r"m\.json: schema: field 'jpg' appears twice"):
        parse_schema(twice, "m.json")
    with pytest.raises(ManifestError, match=r"m\.json: schema: no fields"):
        parse_schema([], "m.json")


def _manifest_text(schema: Any, fields: list[str] | None = None, version: int = 2) -> str:
    return json.dumps(
        {
            "format": "fastpack", "version": version, "num_samples": 0, "classes": [],
            "fields": fields if fields is not None else [f["name"] for f in schema],
            "schema": schema, "key_width": 9, "shards": [], "build": {}, "stats": {},
            "index": {"name": "index.fpx", "bytes": 0, "sha256": ""},
        }
    )  # fmt: skip


def test_manifest_schema_errors_name_the_manifest() -> None:
    good = [{"name": "jpg", "type": "jpeg"}, {"name": "txt", "type": "text"}]
    assert manifest_from_text(_manifest_text(good), "m.json").schema.names == ("jpg", "txt")
    bad = [good[0], {"name": "seg", "type": "png", "geometry": "boxes"}]
    with pytest.raises(
        ManifestError, match=r"^m\.json: schema\[1\]: field 'seg': boxes are an ndarray field"
    ):
        manifest_from_text(_manifest_text(bad), "m.json")
    with pytest.raises(ManifestError, match=r"^m\.json: schema\[0\]: field 'JPG': a field name"):
        manifest_from_text(_manifest_text([{"name": "JPG", "type": "jpeg"}]), "m.json")
    with pytest.raises(ManifestError, match=r"^m\.json: missing key 'schema'"):
        manifest_from_text(_manifest_text(good).replace('"schema"', '"scheme"'), "m.json")
    with pytest.raises(
        ManifestError, match=r"^m\.json: manifest: fields \['txt', 'jpg'\], the schema's are \['jp"
    ):
        manifest_from_text(_manifest_text(good, fields=["txt", "jpg"]), "m.json")


def test_version_1_manifests_type_their_fields_by_extension() -> None:
    manifest = manifest_from_text(_manifest_text([], fields=["jpg", "cls", "txt"], version=1), "m")
    assert [(f.name, f.type) for f in manifest.schema.fields] == [
        ("jpg", "jpeg"), ("cls", "class"), ("txt", "text"),
    ]  # fmt: skip
    with pytest.raises(ManifestError, match=r"^m: manifest fields \['jpg', 'JPG'\]: field 'JPG'"):
        manifest_from_text(_manifest_text([], fields=["jpg", "JPG"], version=1), "m")
    with pytest.raises(ManifestError, match="schema: field 'jpg' appears twice"):
        manifest_from_text(_manifest_text([], fields=["jpg", "jpg"], version=1), "m")
