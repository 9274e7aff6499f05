"""Per-shard records a build keeps until its index is written (never part of a dataset).

A finished shard job leaves `<out>/.fastpack-build/NNNNNN.part.npz`: its index rows, so that a
resumed build can assemble `index.fpx` without re-reading shards that already exist.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from fastpack.formats import IndexPart

from ..build_dir import BUILD_DIR, temp_path
from ..errors import BuildDirError


def part_path(out: str | os.PathLike[str], shard: int) -> Path:
    return Path(out) / BUILD_DIR / f"{shard:06d}.part.npz"


def save_part(path: Path, part: IndexPart, fields: Sequence[str]) -> None:
    """Write atomically (temporary name, then rename). Field arrays are named by the field's
    position in `fields` (names may hold dots)."""
    arrays = {
        "shard": np.array([part.shard], dtype="<i8"),
        "labels": part.labels,
        "key_blob": part.key_blob,
        "key_offsets": part.key_offsets,
        "source_blob": part.source_blob,
        "source_offsets": part.source_offsets,
    }
    for k, f in enumerate(fields):
        arrays[f"offset_{k}"] = part.offsets[f]
        arrays[f"size_{k}"] = part.sizes[f]
        arrays[f"crc32_{k}"] = part.crc32[f]
    tmp = temp_path(path, ".tmp.npz")
    np.savez(tmp, **arrays)  # type: ignore[arg-type]
    os.replace(tmp, path)


def load_part(path: Path, fields: Sequence[str]) -> IndexPart:
    try:
        with np.load(path) as z:
            return IndexPart(
                shard=int(z["shard"][0]),
                labels=z["labels"],
                key_blob=z["key_blob"],
                key_offsets=z["key_offsets"],
                source_blob=z["source_blob"],
                source_offsets=z["source_offsets"],
                offsets={f: z[f"offset_{k}"] for k, f in enumerate(fields)},
                sizes={f: z[f"size_{k}"] for k, f in enumerate(fields)},
                crc32={f: z[f"crc32_{k}"] for k, f in enumerate(fields)},
            )
    except (OSError, KeyError, ValueError) as e:
        raise BuildDirError(
            f"{path}: unreadable index part ({e}); the build directory is damaged: remove "
            f"{path.parent.parent} and build again"
        ) from e
