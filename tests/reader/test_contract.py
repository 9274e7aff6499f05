"""One contract for every reader: the same assertions run against map-style mmap and pread,
streaming from a local directory and from the S3 server, and DALI in CPU mode.

Every sample of the test dataset has its own class, so a label names its sample in every
backend (DALI and the streaming dataset yield labels, not indices).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import numpy as np
import numpy.typing as npt
import pytest
import simplejpeg
from fastpack.compiler import BuildOptions, build
from fastpack.formats import DatasetFiles, DatasetNotFoundError, ShardFormatError
from fastpack.reader import CenterCrop, DaliOptions, Dataset, EpochBatchSampler, StreamingDataset
from fastpack.reader import make_dali_loader as dali_loader
from fastpack.reader.shard_files import IoMethod
from fastpack.reader.streaming import FetchOptions
from fastpack.storage import Location, RetryPolicy

from tests.publish import publish_dataset
from tests.s3_server import S3Server

from .conftest import centre_crop, refresh_manifest

N = 12  # samples, one per class: label k is sample k
WORLD = 2
SIZE, RESIZE = 40, 48  # DALI's evaluation crop (DALI cannot return images of mixed sizes)
DALI_TOLERANCE = 4.0  # mean absolute difference per image, 0..255 (see dali/test_dali.py)
Image = npt.NDArray[np.uint8]
Read = list[tuple[int, Image]]  # (label, image) in reading order


@pytest.fixture
def dataset(make_image_folder: Callable[..., Path], tmp_path: Path) -> Path:
    source = make_image_folder(classes=N, per_class=1, size=48, name="contract-src")
    out = tmp_path / "contract"
    build(source, out, BuildOptions(workers=1, shard_size=8_000, progress=False))
    assert len(DatasetFiles(out).manifest.shards) >= 3
    return out


def full_decode(root: Path) -> dict[int, Image]:
    """label -> the image decoded at full size with simplejpeg, read through the index."""
    files = DatasetFiles(root)
    found: dict[int, Image] = {}
    for i in range(len(files)):
        data = files.shard_path(int(files.index.shard[i])).read_bytes()
        _, offset, size = files.index.locate(i, "jpg", len(data))
        found[int(files.index.label[i])] = simplejpeg.decode_jpeg(
            data[offset : offset + size], colorspace="RGB"
        )
    return found


def payload_span(root: Path, label: int) -> tuple[Path, int, int]:
    """The shard file, offset and size of sample `label`'s JPEG."""
    files = DatasetFiles(root)
    i = int(np.flatnonzero(files.index.label == label)[0])
    path = files.shard_path(int(files.index.shard[i]))
    _, offset, size = files.index.locate(i, "jpg", path.stat().st_size)
    return path, offset, size


class ReaderContract:
    """The assertions. A subclass says how its backend reads one rank's epoch."""

    exact_pixels: ClassVar[bool] = True
    corrupt_message: ClassVar[str] = "does not decode"

    @pytest.fixture
    def root(self, dataset: Path) -> Path:
        return dataset

    def read(self, root: Path, *, rank: int, world: int, seed: int, epoch: int) -> Read:
        raise NotImplementedError

    def read_all(self, root: Path) -> Read:
        return self.read(root, rank=0, world=1, seed=0, epoch=0)

    def test_every_sample_with_its_label(self, root: Path) -> None:
        got = self.read_all(root)
        assert sorted(label for label, _ in got) == list(range(N))

    def test_every_sample_once_per_epoch_across_ranks(self, root: Path) -> None:
        for epoch in (0, 1):
            ranks = [self.read(root, rank=r, world=WORLD, seed=3, epoch=epoch) for r in range(2)]
            assert [len(r) for r in ranks] == [N // WORLD] * WORLD
            labels = [label for r in ranks for label, _ in r]
            assert sorted(labels) == list(range(N))

    def test_pixels(self, root: Path, dataset: Path) -> None:
        reference = full_decode(dataset)
        for label, image in self.read_all(root):
            if self.exact_pixels:
                np.testing.assert_array_equal(image, reference[label])
            else:
                expected = centre_crop(reference[label], SIZE, RESIZE)
                diff = np.abs(image.astype(np.int16) - expected.astype(np.int16)).mean()
                assert diff < DALI_TOLERANCE, (label, diff)

    def test_deterministic_for_a_seed(self, root: Path) -> None:
        def order(seed: int) -> list[int]:
            return [label for label, _ in self.read(root, rank=0, world=1, seed=seed, epoch=1)]

        first = order(5)
        assert order(5) == first
        assert sorted(first) == list(range(N))
        assert any(order(s) != first for s in (6, 7, 8))  # the seed matters

    def test_missing_shard_is_named(self, root: Path, dataset: Path) -> None:
        shard, _, _ = payload_span(dataset, 0)
        self.remove(root, shard.relative_to(dataset).as_posix())
        with pytest.raises(DatasetNotFoundError, match=r"000\d+\.tar"):
            self.read_all(root)

    def test_corrupt_payload_is_named(self, root: Path, dataset: Path) -> None:
        path, offset, size = payload_span(dataset, 5)
        with path.open("r+b") as f:
            f.seek(offset + 2)  # keep the SOI marker, break everything after it
            f.write(b"\x00" * (size - 2))
        refresh_manifest(dataset)  # consistent checksums: the payload itself is what is wrong
        self.republish(root, dataset)
        with pytest.raises(ShardFormatError, match=self.corrupt_message):
            self.read_all(root)

    def remove(self, root: Path, name: str) -> None:
        (root / name).unlink()

    def republish(self, root: Path, dataset: Path) -> None:
        """Make the backend see the dataset's current files (a no-op for local backends)."""


class MapStyle(ReaderContract):
    io: ClassVar[IoMethod] = "mmap"

    def read(self, root: Path, *, rank: int, world: int, seed: int, epoch: int) -> Read:
        with Dataset(root, io=self.io, seed=seed) as ds:
            ds.set_epoch(epoch)
            sampler = EpochBatchSampler(ds, 5, seed=seed, rank=rank, world_size=world)
            out = []
            for batch in sampler:
                for i in batch:
                    image, label = ds[i]
                    out.append((int(label), image))
            return out


class TestMapStyleMmap(MapStyle):
    io = "mmap"


class TestMapStylePread(MapStyle):
    io = "pread"


class TestStreamingLocal(ReaderContract):
    def read(self, root: Path, *, rank: int, world: int, seed: int, epoch: int) -> Read:
        with StreamingDataset(root, rank=rank, world_size=world, seed=seed, shuffle_window=2) as ds:
            ds.set_epoch(epoch)
            return [(int(label), image) for image, label in ds]


class TestStreamingS3(ReaderContract):
    prefix = "contract"  # of the dataset's URL in the bucket

    @pytest.fixture
    def root(self, dataset: Path, s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> Path:
        self.server = s3_server
        self.url = f"s3://{s3_bucket}/{self.prefix}-{uuid.uuid4().hex[:8]}"
        self.cache = tmp_path / "cache"
        self.republish(dataset, dataset)
        return dataset

    def republish(self, root: Path, dataset: Path) -> None:
        publish_dataset(dataset, self.url, self.server.storage_options)

    def remove(self, root: Path, name: str) -> None:
        location = Location(self.url, self.server.storage_options)
        location.fs.rm_file(location.path(name))

    def read(self, root: Path, *, rank: int, world: int, seed: int, epoch: int) -> Read:
        with StreamingDataset(
            self.url,
            rank=rank,
            world_size=world,
            seed=seed,
            shuffle_window=2,
            cache_dir=self.cache / uuid.uuid4().hex[:8],
            storage_options=self.server.storage_options,
            fetch=FetchOptions(retry=RetryPolicy(attempts=2, backoff_s=0.01)),
        ) as ds:
            ds.set_epoch(epoch)
            return [(int(label), image) for image, label in ds]


class TestDaliCpu(ReaderContract):
    exact_pixels = False
    corrupt_message = "DALI failed"

    def read(self, root: Path, *, rank: int, world: int, seed: int, epoch: int) -> Read:
        loader = dali_loader(
            root,
            batch_size=3,
            transform=CenterCrop(SIZE, resize=RESIZE),
            shuffle=True,
            seed=seed,
            rank=rank,
            world_size=world,
            num_workers=1,
            dali=DaliOptions(initial_fill=4),
        )
        with loader:
            epochs: Iterator[Read] = (
                [
                    (int(v), img.numpy())
                    for images, labels in loader
                    for img, v in zip(images, labels, strict=True)
                ]
                for _ in range(epoch + 1)
            )
            return list(epochs)[-1]
