"""Inputs whose bytes a dataset holds already: what `append --skip-duplicates` leaves out.

An input is looked up by its *content key*, `(size << 32) | crc32` of its bytes (the bytes the
build reads for it: a file, or a source tar's member), in the sorted keys of the stored images
(`stored_keys`: the index's image `size` and `crc32` columns, SPEC section 3). A key found is a
candidate only: it is a duplicate once the candidate sample's image bytes, read from its shard
through the index, equal the input's exactly (`find_stored`). So an input is a duplicate of a
stored sample only where the sample holds its bytes as they are: a JPEG stored byte for byte;
an input the build converts (PNG, CMYK, shrunk, transcoded) never matches.

The table lives in the staging build's directory (`write_table`), written once before the
shard jobs, so that a resumed append looks up the same keys. Duplicates among the new inputs
themselves are found before the jobs too (`compiler.append.duplicate_pass`), and listed there
(`FOUND`) by plan position.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import Index
from fastpack.storage import Location

from ..build_dir import temp_path

KEYS = "duplicates.keys.npy"  # <u8: the stored images' content keys, sorted
SAMPLES = "duplicates.samples.npy"  # <u8: the sample of each key, in the same order
FOUND = "duplicates.found.json"  # [[plan position, key of the sample it duplicates], ...]

Keys = npt.NDArray[np.uint64]


def content_key(data: bytes) -> int:
    """`(size << 32) | crc32` of `data`: the key the index's columns give a stored member."""
    return (len(data) << 32) | zlib.crc32(data)


def stored_keys(
    sizes: npt.NDArray[np.uint64], crc32: npt.NDArray[np.uint32], present: npt.NDArray[np.bool_]
) -> tuple[Keys, Keys]:
    """`(keys, samples)`: the content key of every present member, sorted, and the sample
    number of each (samples of one key in increasing order)."""
    keys = (sizes.astype(np.uint64) << np.uint64(32)) | crc32.astype(np.uint64)
    samples = np.flatnonzero(present).astype(np.uint64)
    keys = keys[samples]
    order = np.argsort(keys, kind="stable")
    return keys[order], samples[order]


def find_stored(data: bytes, keys: Keys, samples: Keys, read: Callable[[int], bytes]) -> int | None:
    """The first sample (in key order) whose member bytes, `read(sample)`, equal `data`, among
    the candidates of `data`'s content key; None where no candidate is confirmed."""
    key = np.uint64(content_key(data))
    lo = int(np.searchsorted(keys, key, side="left"))
    hi = int(np.searchsorted(keys, key, side="right"))
    for j in range(lo, hi):
        sample = int(samples[j])
        if read(sample) == data:
            return sample
    return None


@dataclass(frozen=True, kw_only=True)
class StoredDataset:
    """Where a shard job finds the dataset an append grows: its previous version's index (a
    local file), the schema's field names and image field, its shards' names, and the dataset
    (a local directory, or a `Location`) they resolve against."""

    index: str
    fields: tuple[str, ...]
    image: str
    shards: tuple[str, ...]
    root: str
    location: Location | None = None


def write_table(build_dir: Path, stored: StoredDataset) -> None:
    """The sorted content keys of `stored`'s images (`KEYS`, `SAMPLES`) in `build_dir`, unless
    a resumed build wrote them already."""
    if (build_dir / SAMPLES).exists():
        return
    index = Index(stored.index, stored.fields)
    keys, samples = stored_keys(
        index.sizes(stored.image), index.crc32(stored.image), index.present(stored.image)
    )
    for name, array in ((KEYS, keys), (SAMPLES, samples)):
        tmp = temp_path(build_dir / name, ".npy")
        np.save(tmp, array.astype("<u8"))
        os.replace(tmp, build_dir / name)


@dataclass
class StoredImages:
    """The look-up of one process: the table memory-mapped, the index opened on the first
    candidate, a shard file kept open while candidates fall in it."""

    stored: StoredDataset
    build_dir: Path
    _keys: Keys = field(init=False)
    _samples: Keys = field(init=False)
    _index: Index | None = field(default=None, init=False)
    _files: dict[int, Any] = field(default_factory=dict, init=False)

    def __post_init__(self) -> None:
        self._keys = np.load(self.build_dir / KEYS, mmap_mode="r")
        self._samples = np.load(self.build_dir / SAMPLES, mmap_mode="r")

    def find(self, data: bytes) -> str | None:
        """The key of a stored sample whose image is exactly `data`, else None."""
        sample = find_stored(data, self._keys, self._samples, self._read)
        return None if sample is None else self._opened().key(sample)

    def _opened(self) -> Index:
        if self._index is None:
            self._index = Index(self.stored.index, self.stored.fields)
        return self._index

    def _read(self, sample: int) -> bytes:
        index = self._opened()
        shard = int(index.shard[sample])
        offset = int(index.offsets(self.stored.image)[sample])
        size = int(index.sizes(self.stored.image)[sample])
        name = self.stored.shards[shard]
        if self.stored.location is not None:
            return self.stored.location.read_range(name, offset, offset + size)
        fd = self._files.get(shard)
        if fd is None:
            fd = self._files[shard] = os.open(os.path.join(self.stored.root, name), os.O_RDONLY)
        return os.pread(fd, size, offset)

    def close(self) -> None:
        for fd in self._files.values():
            os.close(fd)
        self._files.clear()


def save_found(build_dir: Path, found: list[tuple[int, str]]) -> None:
    """The duplicates among the new inputs (`FOUND`), by plan position."""
    path = build_dir / FOUND
    tmp = temp_path(path)
    tmp.write_text(json.dumps(found), encoding="utf-8")
    os.replace(tmp, path)


def load_found(build_dir: Path) -> dict[int, str] | None:
    """The duplicates `save_found` listed, by plan position; None where there is no list."""
    try:
        text = (build_dir / FOUND).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return {int(position): str(key) for position, key in json.loads(text)}


class Duplicates:
    """What a shard job asks: is the input at a plan position a duplicate, and of which
    sample's key (`listed`, from the list made before the jobs), and is an input's content
    stored already (`stored`)."""

    def __init__(self, stored: StoredDataset | None, build_dir: Path) -> None:
        self._images = None if stored is None else StoredImages(stored, build_dir)
        self._found = (load_found(build_dir) if stored is not None else None) or {}

    def listed(self, position: int) -> str | None:
        return self._found.get(position)

    def stored(self, data: bytes) -> str | None:
        return None if self._images is None else self._images.find(data)

    def close(self) -> None:
        if self._images is not None:
            self._images.close()

    def __enter__(self) -> Duplicates:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
