"""Shards written by other tools, for `fastpack index`: webdataset tars by
`webdataset.ShardWriter`, TFRecord files by TensorFlow; and what the tests compare."""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections.abc import Callable
from pathlib import Path

import cv2
import numpy as np
import numpy.typing as npt
import pytest
import simplejpeg
import webdataset

from tests.conftest import jpeg_bytes

Image = npt.NDArray[np.uint8]


def write_tars(
    folder: Path,
    count: int,
    *,
    per_shard: int = 5,
    label: Callable[[int], bytes] = lambda i: str(i).encode(),
    extra: Callable[[int], dict[str, bytes]] = lambda i: {"txt": f"caption {i}".encode()},
) -> Path:
    """`count` samples (a JPEG of seed i, its label member, `extra` members) written by
    webdataset.ShardWriter into `folder/train-NNNNNN.tar`, `per_shard` a shard."""
    folder.mkdir(parents=True, exist_ok=True)
    with webdataset.ShardWriter(str(folder / "train-%06d.tar"), maxcount=per_shard, verbose=0) as w:
        for i in range(count):
            sample = {"__key__": f"sample{i:04d}", "jpg": jpeg_bytes(32, 40, seed=i)}
            sample["cls"] = label(i)
            sample.update(extra(i))
            w.write(sample)
    return folder


def tar_members(folder: Path) -> dict[str, dict[str, bytes]]:
    """key -> extension -> bytes of every member of the tars in `folder`, read by tarfile."""
    found: dict[str, dict[str, bytes]] = {}
    for path in sorted(folder.glob("*.tar")):
        with tarfile.open(path) as tar:
            for info in tar:
                data = tar.extractfile(info)
                key, _, ext = info.name.partition(".")
                found.setdefault(key, {})[ext] = data.read() if data else b""
    return found


def decode(data: bytes) -> Image:
    image: Image = simplejpeg.decode_jpeg(data, colorspace="RGB")
    return image


def digests(folder: Path) -> dict[str, str]:
    """SHA-256 of every file under `folder`, by relative path."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def png_bytes_of(seed: int) -> bytes:
    image = np.full((16, 16, 3), seed % 255, np.uint8)
    ok, encoded = cv2.imencode(".png", image)
    assert ok
    return bytes(encoded)


def write_tar(
    path: Path, members: list[tuple[str, bytes]], fmt: int = tarfile.USTAR_FORMAT
) -> None:
    """A tar of `members` (name, bytes), in order, as tarfile writes it in format `fmt`."""
    with tarfile.open(path, "w", format=fmt) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


@pytest.fixture
def tars(tmp_path: Path) -> Path:
    """12 samples in 3 webdataset tars (5, 5, 2), labels 0..11, a caption each."""
    return write_tars(tmp_path / "tars", 12)
