"""Names of the files inside a dataset directory (formats/SPEC.md section 1)."""

from __future__ import annotations

# The dataset format's versions (SPEC section 7), which a dataset's manifest and index share:
# writers give version 2 to every dataset that version 1 cannot describe, and version 3 only to
# datasets with adopted shards or grown by appends (SPEC 10, 11).
VERSION = 2
EXTENDED_VERSION = 3
SUPPORTED_VERSIONS = (1, 2, 3)
MANIFEST_NAME = "fastpack.json"
INDEX_NAME = "index.fpx"
SHARDS_DIR = "shards"
REJECTS_NAME = "rejects.jsonl"
VERSIONS_DIR = "versions"
LOCK_NAME = "append.lock"
MIN_KEY_WIDTH = 9


def shard_stem(shard: int) -> str:
    """`shards/000042` for shard 42 (zero-padded to 6 digits)."""
    if shard < 0:
        raise ValueError(f"shard number must be >= 0, got {shard}")
    return f"{SHARDS_DIR}/{shard:06d}"


SHARD_FORMATS = ("tar", "tfrecord")
SHARD_SUFFIXES = {"tar": ".tar", "tfrecord": ".tfrecord"}


def shard_tar_name(shard: int) -> str:
    return shard_stem(shard) + ".tar"


def shard_name(shard: int, shard_format: str = "tar") -> str:
    """`shards/000042.tar` or `shards/000042.tfrecord`."""
    if shard_format not in SHARD_SUFFIXES:
        raise ValueError(
            f"shard format {shard_format!r}: expected one of {', '.join(SHARD_FORMATS)}"
        )
    return shard_stem(shard) + SHARD_SUFFIXES[shard_format]


def shard_idx_name(shard: int) -> str:
    return shard_stem(shard) + ".idx"


def key_width(plan_size: int) -> int:
    """Digits of every key for a build plan of `plan_size` samples."""
    return max(MIN_KEY_WIDTH, len(str(max(plan_size - 1, 0))))


def sample_key(position: int, width: int) -> str:
    """The key of the sample at plan position `position`."""
    return f"{position:0{width}d}"


def version_dir(version: int) -> str:
    """`versions/000002`: where the files of dataset version `version` (>= 1) lie (SPEC 11)."""
    if version < 1:
        raise ValueError(f"dataset version must be >= 1, got {version}")
    return f"{VERSIONS_DIR}/{version:06d}"


def version_manifest_name(version: int) -> str:
    return f"{version_dir(version)}/{MANIFEST_NAME}"


def version_index_name(version: int) -> str:
    """The index of dataset version `version`: the build's `index.fpx` for version 1."""
    return INDEX_NAME if version == 1 else f"{version_dir(version)}/{INDEX_NAME}"


def version_rejects_name(version: int) -> str:
    return REJECTS_NAME if version == 1 else f"{version_dir(version)}/{REJECTS_NAME}"
