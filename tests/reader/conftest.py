"""Datasets for the reader tests, built by `fastpack.compiler.build` from ImageFolder trees, and
those datasets published at a `memory://` URL."""

from __future__ import annotations

import hashlib
import struct
import uuid
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple

import cv2
import fsspec
import numpy as np
import numpy.typing as npt
import pytest
from fastpack.compiler import BuildOptions, build
from fastpack.formats import INDEX_NAME, MANIFEST_NAME, read_manifest, write_manifest
from fastpack.formats.checksum import file_crc32c
from fastpack.formats.schema import FileInfo

from ..conftest import jpeg_bytes


class Built(NamedTuple):
    source: Path  # the ImageFolder
    path: Path  # the dataset


def one_class_per_sample(
    root: Path, samples: int, *, size: tuple[int, int], shard_size: int, digits: int = 3
) -> Path:
    """A dataset at `root / "ds"` of `samples` JPEGs of `size` (height, width), each its own
    class (folder `c<k>`, `digits` wide), so that a batch's labels name its samples."""
    for label in range(samples):
        folder = root / "src" / f"c{label:0{digits}d}"
        folder.mkdir(parents=True)
        (folder / "a.jpg").write_bytes(jpeg_bytes(*size, seed=label))
    build(root / "src", root / "ds", BuildOptions(workers=1, shard_size=shard_size, progress=False))
    return root / "ds"


@pytest.fixture
def build_dataset(make_image_folder: Callable[..., Path], tmp_path: Path) -> Callable[..., Built]:
    """Factory: an ImageFolder (conftest's `make_image_folder`) compiled into a dataset."""

    def make(  # noqa: PLR0913 -- keyword inputs
        *,
        classes: int = 3,
        per_class: int = 4,
        size: int = 64,
        shard_size: int = 24_000,
        name: str = "ds",
        seed: int = 0,
    ) -> Built:
        source = make_image_folder(
            classes=classes, per_class=per_class, size=size, seed=seed, name=f"{name}-src"
        )
        out = tmp_path / name
        build(source, out, BuildOptions(workers=1, shard_size=shard_size, progress=False))
        return Built(source, out)

    return make


def section(root: Path, name: str) -> np.memmap:
    """A writable view of one section of `root`'s index, found through the section table
    (formats/SPEC.md section 3): to damage or edit an index in place."""
    path = root / INDEX_NAME
    with path.open("rb") as f:
        (count,) = struct.unpack_from("<I", f.read(64), 28)
        table = f.read(48 * count)
    for k in range(count):
        raw_name, dtype, offset, length = struct.unpack_from("<24s8sQQ", table, 48 * k)
        if raw_name.rstrip(b"\0").decode() == name:
            return np.memmap(path, np.dtype(dtype.rstrip(b"\0").decode()), "r+", offset, length)
    raise KeyError(name)


def refresh_manifest(root: Path) -> None:
    """Record the current sizes and checksums (SHA-256, and CRC-32C where recorded) of the index
    and shards in the manifest, as if the files had been written so (to reach checks behind the
    checksums)."""
    manifest = read_manifest(root / MANIFEST_NAME)

    def info(name: str) -> tuple[int, str]:
        data = (root / name).read_bytes()
        return len(data), hashlib.sha256(data).hexdigest()

    size, digest = info(INDEX_NAME)
    shards = []
    for s in manifest.shards:
        shard_size, shard_digest = info(s.name)
        crc = None if s.crc32c is None else file_crc32c(root / s.name)
        shards.append(replace(s, bytes=shard_size, sha256=shard_digest, crc32c=crc))
    write_manifest(
        root / MANIFEST_NAME,
        replace(
            manifest,
            index=FileInfo(name=INDEX_NAME, bytes=size, sha256=digest),
            shards=tuple(shards),
        ),
    )


def centre_crop(image: npt.NDArray[np.uint8], size: int, resize: int) -> npt.NDArray[np.uint8]:
    """What DALI's evaluation pipeline computes, with OpenCV: shorter side to `resize` (area
    filter down, bilinear up), then the centre `size` x `size`."""
    h, w = image.shape[:2]
    scale = resize / min(h, w)
    out_h, out_w = (resize, round(w * scale)) if h <= w else (round(h * scale), resize)
    interpolation = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    resized = cv2.resize(image, (out_w, out_h), interpolation=interpolation)
    top, left = (out_h - size + 1) // 2, (out_w - size + 1) // 2
    return np.asarray(resized[top : top + size, left : left + size])


@pytest.fixture
def publish() -> Iterator[Callable[[Path], str]]:
    """`publish(root)`: a copy of the dataset at `root` at a new `memory://` URL (removed after)."""
    fs = fsspec.filesystem("memory")
    prefixes: list[str] = []

    def copy(root: Path) -> str:
        prefix = f"/fastpack-{uuid.uuid4().hex[:12]}/ds"
        prefixes.append(prefix)
        for path in root.rglob("*"):
            if path.is_file():
                fs.pipe_file(f"{prefix}/{path.relative_to(root).as_posix()}", path.read_bytes())
        return f"memory:/{prefix}"

    yield copy
    for prefix in prefixes:
        fs.rm(prefix, recursive=True)
