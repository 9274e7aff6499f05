"""`fastpack.formats` exports the on-disk contract, and only it: the names below, which its
docstring lists by SPEC section. Growing it is a decision, taken here and in the docstring."""

from __future__ import annotations

import re

import fastpack.formats

CONTRACT = {
    # the dataset's files
    "INDEX_NAME",
    "MANIFEST_NAME",
    "REJECTS_NAME",
    "SHARDS_DIR",
    "SUPPORTED_VERSIONS",
    "VIEWS_DIR",
    "shard_name",
    # the manifest and its schema
    "Manifest",
    "ShardInfo",
    "read_manifest",
    "write_manifest",
    # dataset versions (section 11)
    "VersionInfo",
    "read_dataset_manifest",
    "FieldSpec",
    "Schema",
    "Zstd",
    # field types and member bytes
    "FieldTypeDef",
    "field_type",
    "register_field_type",
    "decode_value",
    "encode_value",
    # the index
    "ABSENT",
    "Index",
    "IndexPart",
    "IndexWriter",
    # shards and a whole dataset
    "DatasetFiles",
    "read_records",
    "scan_members",
    # views
    "View",
    "read_view_file",
    "write_view_file",
    # the errors a user catches
    "AbsentFieldError",
    "BadMagicError",
    "ChecksumMismatchError",
    "CorruptIndexError",
    "DatasetNotFoundError",
    "FastpackError",
    "FieldValueError",
    "FormatError",
    "ManifestError",
    "OffsetOutOfRangeError",
    "PixelBudgetError",
    "ShardFormatError",
    "TruncatedFileError",
    "UnsupportedVersionError",
    "VersionNotFoundError",
    "ViewError",
    "ViewMismatchError",
}


def test_the_package_exports_the_contract() -> None:
    assert set(fastpack.formats.__all__) == CONTRACT
    assert len(fastpack.formats.__all__) == len(CONTRACT)


def test_the_docstring_names_the_contract() -> None:
    doc = fastpack.formats.__doc__ or ""
    listed = doc[: doc.index("Everything else")]
    assert set(re.findall(r"`(\w+)`", listed)) == CONTRACT


def test_nothing_else_is_public_in_the_package() -> None:
    public = {
        name
        for name, value in vars(fastpack.formats).items()
        if not name.startswith("_") and type(value).__name__ != "module"
    }
    assert public == CONTRACT


def test_every_error_is_a_fastpack_error() -> None:
    errors = [getattr(fastpack.formats, n) for n in CONTRACT if n.endswith("Error")]
    assert len(errors) == 17
    assert all(issubclass(e, fastpack.formats.FastpackError) for e in errors)
