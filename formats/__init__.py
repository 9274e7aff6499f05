"""The on-disk contract of fastpack: manifest, binary index, tar shards and DALI indexes.

formats/SPEC.md is the normative description; each module here implements one artifact.
"""

from .checksum import file_sha256
from .dataset_files import DatasetFiles
from .errors import (
    BadMagicError,
    ChecksumMismatchError,
    CorruptIndexError,
    DatasetNotFoundError,
    FastpackError,
    FormatError,
    ManifestError,
    OffsetOutOfRangeError,
    ShardFormatError,
    TruncatedFileError,
    UnsupportedVersionError,
)
from .index import Index, IndexPart, IndexWriter
from .layout import (
    INDEX_NAME,
    MANIFEST_NAME,
    REJECTS_NAME,
    SHARDS_DIR,
    key_width,
    sample_key,
    shard_idx_name,
    shard_tar_name,
)
from .manifest import (
    DEFAULT_FIELDS,
    FileInfo,
    Manifest,
    ShardInfo,
    manifest_from_text,
    parse_manifest,
    read_manifest,
    write_manifest,
)
from .string_table import pack_strings, string_at, unpack_strings
from .tar_shard import MemberLocation, TarShardWriter, check_key, member_header, scan_members
from .wds_index import format_wds_index, parse_wds_index, read_wds_index

__all__ = [
    "DEFAULT_FIELDS",
    "INDEX_NAME",
    "MANIFEST_NAME",
    "REJECTS_NAME",
    "SHARDS_DIR",
    "BadMagicError",
    "ChecksumMismatchError",
    "CorruptIndexError",
    "DatasetFiles",
    "DatasetNotFoundError",
    "FastpackError",
    "FileInfo",
    "FormatError",
    "Index",
    "IndexPart",
    "IndexWriter",
    "Manifest",
    "ManifestError",
    "MemberLocation",
    "OffsetOutOfRangeError",
    "ShardFormatError",
    "ShardInfo",
    "TarShardWriter",
    "TruncatedFileError",
    "UnsupportedVersionError",
    "check_key",
    "file_sha256",
    "format_wds_index",
    "key_width",
    "manifest_from_text",
    "member_header",
    "pack_strings",
    "parse_manifest",
    "parse_wds_index",
    "read_manifest",
    "read_wds_index",
    "sample_key",
    "scan_members",
    "shard_idx_name",
    "shard_tar_name",
    "string_at",
    "unpack_strings",
    "write_manifest",
]
