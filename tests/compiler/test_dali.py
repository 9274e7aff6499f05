"""NVIDIA DALI (CPU-only) reads the shards through their .idx files: same labels, same pixels."""

from __future__ import annotations

import numpy as np
import pytest
import simplejpeg
from fastpack.formats import DatasetFiles

from tests.compiler._helpers import StoredSample, read_dataset
from tests.compiler.test_interop import build_mixed

BATCH = 4


@pytest.fixture(scope="module")
def dali_read(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[StoredSample], list, list]:
    """The dataset's samples, and the images and cls bytes DALI's webdataset reader gives."""
    from nvidia.dali import fn, pipeline_def, types  # noqa: PLC0415 - slow import, one module

    out = build_mixed(tmp_path_factory.mktemp("dali"))
    files = DatasetFiles(out)
    shards = [i for i, s in enumerate(files.manifest.shards) if s.samples]  # DALI skips nothing
    paths = [str(files.shard_path(i)) for i in shards]
    indexes = [str(files.shard_index_path(i)) for i in shards]

    @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None, seed=0)  # type: ignore[misc]
    def pipeline():  # type: ignore[no-untyped-def]
        jpg, cls = fn.readers.webdataset(
            paths=paths, index_paths=indexes, ext=["jpg", "cls"],
            dtypes=[types.UINT8, types.UINT8], missing_component_behavior="error",
            random_shuffle=False, name="reader",
        )  # fmt: skip
        return fn.decoders.image(jpg, device="cpu", output_type=types.RGB), cls

    pipe = pipeline()
    pipe.build()
    samples = read_dataset(out)
    images, labels = [], []
    while len(images) < len(samples):
        batch_images, batch_cls = pipe.run()
        for k in range(BATCH):
            images.append(np.array(batch_images.at(k)))
            labels.append(bytes(np.array(batch_cls.at(k))))
    return samples, images[: len(samples)], labels[: len(samples)]


def test_dali_labels(dali_read: tuple[list[StoredSample], list, list]) -> None:
    samples, _, labels = dali_read
    assert len(samples) > 10
    assert labels == [s.cls for s in samples]
    assert [int(b) for b in labels] == [s.label for s in samples]


def test_dali_pixels_match_simplejpeg(dali_read: tuple[list[StoredSample], list, list]) -> None:
    samples, images, _ = dali_read
    for sample, image in zip(samples, images, strict=True):
        expected = simplejpeg.decode_jpeg(sample.jpg, colorspace="RGB")
        assert image.shape == expected.shape
        # Both decode with libjpeg-turbo (accurate IDCT, fancy upsampling): identical pixels.
        assert np.array_equal(image, expected), sample.source
