"""The on-disk contract of fastpack: formats/SPEC.md is its normative description, and each module
here implements one artifact of it.

The package exports the contract, and only it: what SPEC specifies and the errors a user of a
dataset catches.

- The dataset's files (SPEC sections 1, 2.3, 7, 8): `MANIFEST_NAME`, `INDEX_NAME`, `SHARDS_DIR`,
  `shard_name`, `REJECTS_NAME`, `VIEWS_DIR`, `SUPPORTED_VERSIONS`.
- The manifest (2): `Manifest`, `ShardInfo`, `read_manifest`, `write_manifest`; its schema (2.1,
  2.2): `Schema`, `FieldSpec`, `Zstd`; the versions of a dataset grown by appends (11):
  `VersionInfo`, `read_dataset_manifest`.
- The field types and their member bytes (2.1, 4.1): `FieldTypeDef`, `field_type`,
  `register_field_type`, `encode_value`, `decode_value`.
- The index (3): `Index`, `IndexWriter`, `IndexPart`, `ABSENT`.
- The shards (4, 4.2): `scan_members` (tar), `read_records` (TFRecord); a dataset's manifest,
  index and shards opened together: `DatasetFiles`.
- Views (8): `View`, `read_view_file`, `write_view_file`.
- The errors: `FastpackError`, `FormatError`, `ManifestError`, `CorruptIndexError`,
  `BadMagicError`, `UnsupportedVersionError`, `TruncatedFileError`, `OffsetOutOfRangeError`,
  `ShardFormatError`, `ChecksumMismatchError`, `DatasetNotFoundError`, `AbsentFieldError`,
  `FieldValueError`, `PixelBudgetError`, `ViewError`, `ViewMismatchError`,
`VersionNotFoundError`.

Everything else is imported from its module: the byte layouts (`index_layout`, `tfrecord`,
`tar_shard`, `example`, `wds_index`), the parsers and checks (`manifest`, `schema`, `view`,
`image_header`), `checksum`, `string_table`, `field_codec` and `field_types`.
"""

from .dataset_files import DatasetFiles
from .errors import (
    AbsentFieldError,
    BadMagicError,
    ChecksumMismatchError,
    CorruptIndexError,
    DatasetNotFoundError,
    FastpackError,
    FieldValueError,
    FormatError,
    ManifestError,
    OffsetOutOfRangeError,
    ShardFormatError,
    TruncatedFileError,
    UnsupportedVersionError,
    VersionNotFoundError,
    ViewError,
    ViewMismatchError,
)
from .field_codec import decode_value, encode_value
from .field_types import FieldTypeDef, field_type, register_field_type
from .image_header import PixelBudgetError
from .index import Index
from .index_layout import ABSENT
from .index_writer import IndexPart, IndexWriter
from .layout import (
    INDEX_NAME,
    MANIFEST_NAME,
    REJECTS_NAME,
    SHARDS_DIR,
    SUPPORTED_VERSIONS,
    shard_name,
)
from .manifest import Manifest, ShardInfo, VersionInfo, read_manifest, write_manifest
from .schema import FieldSpec, Schema, Zstd
from .tar_shard import scan_members
from .tfrecord import read_records
from .versions import read_dataset_manifest
from .view import VIEWS_DIR, View, read_view_file, write_view_file

__all__ = [
    "ABSENT",
    "INDEX_NAME",
    "MANIFEST_NAME",
    "REJECTS_NAME",
    "SHARDS_DIR",
    "SUPPORTED_VERSIONS",
    "VIEWS_DIR",
    "AbsentFieldError",
    "BadMagicError",
    "ChecksumMismatchError",
    "CorruptIndexError",
    "DatasetFiles",
    "DatasetNotFoundError",
    "FastpackError",
    "FieldSpec",
    "FieldTypeDef",
    "FieldValueError",
    "FormatError",
    "Index",
    "IndexPart",
    "IndexWriter",
    "Manifest",
    "ManifestError",
    "OffsetOutOfRangeError",
    "PixelBudgetError",
    "Schema",
    "ShardFormatError",
    "ShardInfo",
    "TruncatedFileError",
    "UnsupportedVersionError",
    "VersionInfo",
    "VersionNotFoundError",
    "View",
    "ViewError",
    "ViewMismatchError",
    "Zstd",
    "decode_value",
    "encode_value",
    "field_type",
    "read_dataset_manifest",
    "read_manifest",
    "read_records",
    "read_view_file",
    "register_field_type",
    "scan_members",
    "shard_name",
    "write_manifest",
    "write_view_file",
]
