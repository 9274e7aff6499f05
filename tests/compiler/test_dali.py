"""NVIDIA DALI (CPU-only) reads the shards through their .idx files: same labels, same pixels."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest
import simplejpeg
from fastpack.formats import DatasetFiles

from tests.compiler._helpers import StoredSample, read_dataset
from tests.compiler.test_interop import build_mixed

BATCH = 4

# The dataset's samples, and the images and cls bytes DALI gives for them.
DaliRead = tuple[list[StoredSample], list[npt.NDArray[np.uint8]], list[bytes]]


@pytest.fixture(scope="module", params=[0, 64], ids=["as stored", "restart markers"])
def dali_read(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> DaliRead:
    """The dataset's samples, and the images and cls bytes DALI's webdataset reader gives: of
    a plain build, and of one whose JPEGs carry restart markers (`restart_width`)."""
    from nvidia.dali import fn, types  # noqa: PLC0415 -- optional: DALI
    from nvidia.dali.data_node import DataNode  # noqa: PLC0415 -- optional: DALI
    from nvidia.dali.pipeline import pipeline_def  # noqa: PLC0415 -- optional: DALI

    out = build_mixed(tmp_path_factory.mktemp("dali"), restart_width=request.param)
    files = DatasetFiles(out)
    shards = [i for i, s in enumerate(files.manifest.shards) if s.samples]  # DALI skips nothing
    paths = [str(files.shard_path(i)) for i in shards]
    indexes = [str(files.shard_index_path(i)) for i in shards]

    # The pipeline's arguments are given when it is made (DALI's stubs type `device_id` as an
    # int in the decorator's arguments; None, CPU only, is what DALI documents).
    @pipeline_def
    def pipeline() -> tuple[DataNode, DataNode]:
        outputs = fn.readers.webdataset(
            paths=paths,
            index_paths=indexes,
            ext=["jpg", "cls"],
            dtypes=[types.DALIDataType.UINT8, types.DALIDataType.UINT8],
            missing_component_behavior="error",
            random_shuffle=False,
            name="reader",
        )
        assert isinstance(outputs, Sequence)  # two outputs (stubs: one, several or none)
        jpg, cls = outputs
        images = fn.decoders.image(jpg, device="cpu", output_type=types.DALIImageType.RGB)
        assert isinstance(images, DataNode)
        return images, cls

    pipe = pipeline(batch_size=BATCH, num_threads=1, device_id=None, seed=0)
    pipe.build()  # type: ignore[no-untyped-call]  # DALI leaves Pipeline.build unannotated
    samples = read_dataset(out)
    images: list[npt.NDArray[np.uint8]] = []
    labels: list[bytes] = []
    while len(images) < len(samples):
        batch_images, batch_cls = pipe.run()
        for k in range(BATCH):
            images.append(np.array(batch_images.at(k)))
            labels.append(bytes(np.array(batch_cls.at(k))))
    return samples, images[: len(samples)], labels[: len(samples)]


def test_dali_labels(dali_read: DaliRead) -> None:
    samples, _, labels = dali_read
    assert len(samples) > 10
    assert labels == [s.cls for s in samples]
    assert [int(b) for b in labels] == [s.label for s in samples]


def test_dali_pixels_match_simplejpeg(dali_read: DaliRead) -> None:
    samples, images, _ = dali_read
    for sample, image in zip(samples, images, strict=True):
        expected = simplejpeg.decode_jpeg(sample.jpg, colorspace="RGB")
        assert image.shape == expected.shape
        # Both decode with libjpeg-turbo (accurate IDCT, fancy upsampling): identical pixels.
        assert np.array_equal(image, expected), sample.source
