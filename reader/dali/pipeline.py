"""The DALI graph over a dataset's tar shards: `fn.readers.webdataset`, decode, resize, crop.

`device="cpu"` keeps every operator on the CPU (`device_id=None`, no CUDA needed) and outputs
uint8 HWC images. `device="gpu"` decodes with nvJPEG (`device="mixed"`), resizes and normalizes on
the GPU and outputs float32 CHW; that path is written from DALI's documentation and is not
exercised by this project's tests, which run without a GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nvidia.dali import fn, types
from nvidia.dali.data_node import DataNode
from nvidia.dali.pipeline import Pipeline

from .options import LABEL_FIELD, READER_NAME, PipelineOptions

__all__ = ["READER_NAME", "build_pipeline"]


def _read(o: PipelineOptions) -> tuple[DataNode, DataNode]:
    """(image bytes, cls bytes) of this rank's samples; the image member is `o.field`.

    Every rank reads ceil(N / num_shards) samples per epoch (`pad_last_batch` repeats a shard's
    last sample). With `shuffle`, the order of the tars is reshuffled every epoch with the same
    seed on every rank, so that ranks still split each epoch's samples between them, and samples
    are drawn at random from a buffer of `initial_fill`.
    """
    outputs = fn.readers.webdataset(
        name=READER_NAME,
        paths=list(o.paths),
        index_paths=list(o.index_paths),
        ext=[o.field, LABEL_FIELD],
        dtypes=[types.DALIDataType.UINT8, types.DALIDataType.UINT8],
        missing_component_behavior="error",
        shard_id=o.shard_id,
        num_shards=o.num_shards,
        pad_last_batch=True,
        random_shuffle=o.shuffle,
        initial_fill=o.initial_fill,
        shuffle_after_epoch=o.shuffle,
        shuffle_after_epoch_seed=o.seed if o.shuffle else None,
        dont_use_mmap=o.dont_use_mmap,
    )
    if not isinstance(outputs, Sequence) or len(outputs) != 2:
        raise RuntimeError(f"fn.readers.webdataset returned {outputs!r}, expected two outputs")
    return outputs[0], outputs[1]


def _one(node: DataNode | Sequence[DataNode] | None) -> DataNode:
    """The single output of an operator (DALI's stubs type them all as maybe-several)."""
    if not isinstance(node, DataNode):
        raise TypeError(f"expected one DALI output, got {node!r}")
    return node


def _decoder_options(o: PipelineOptions) -> dict[str, Any]:
    """The arguments both decoders take: device, RGB output, IDCT and chroma upsampling."""
    options: dict[str, Any] = {
        "device": "mixed" if o.device == "gpu" else "cpu",
        "output_type": types.DALIImageType.RGB,
        "use_fast_idct": o.fast_idct,
    }
    if o.device == "gpu":  # the CPU decoder always upsamples smoothly and has no such switch
        options["jpeg_fancy_upsampling"] = o.fancy_upsampling
    return options


def _train_images(jpg: DataNode, o: PipelineOptions) -> DataNode:
    """Random-resized-crop (decoding only the crop's region) and a horizontal flip with
    probability `flip_prob`."""
    images = _one(
        fn.decoders.image_random_crop(
            jpg,
            random_area=list(o.scale),
            random_aspect_ratio=list(o.ratio),
            num_attempts=10,
            **_decoder_options(o),
        )
    )
    images = _one(fn.resize(images, resize_x=o.size, resize_y=o.size))
    return _finish(images, o, mirror=fn.random.coin_flip(probability=o.flip_prob))


def _eval_images(jpg: DataNode, o: PipelineOptions) -> DataNode:
    """Shorter side resized to `resize_size`, then the centre `size` x `size` square."""
    images = _one(fn.decoders.image(jpg, **_decoder_options(o)))
    images = _one(fn.resize(images, resize_shorter=o.resize_size))
    return _finish(images, o, crop=[o.size, o.size])


def _finish(
    images: DataNode,
    o: PipelineOptions,
    mirror: DataNode | int = 0,
    crop: list[float] | None = None,
) -> DataNode:
    """Crop and flip; on the GPU also normalize to float32 CHW, on the CPU stay uint8 HWC."""
    if o.device == "gpu":
        return fn.crop_mirror_normalize(
            images,
            crop=crop,
            mirror=mirror,
            dtype=types.DALIDataType.FLOAT,
            output_layout="CHW",
            mean=[255 * m for m in o.mean],
            std=[255 * s for s in o.std],
        )
    return fn.crop_mirror_normalize(
        images, crop=crop, mirror=mirror, dtype=types.DALIDataType.UINT8, output_layout="HWC"
    )


def build_pipeline(o: PipelineOptions) -> Pipeline:
    """A pipeline with two outputs: images, and `cls` bytes zero-padded to the batch's widest."""
    pipe = Pipeline(  # type: ignore[no-untyped-call]
        batch_size=o.batch_size,
        num_threads=o.num_threads,
        device_id=o.device_id if o.device == "gpu" else None,
        seed=o.seed + 7919 * o.shard_id,  # augmentations differ between ranks
        prefetch_queue_depth=o.prefetch_queue_depth,
    )
    with pipe:
        jpg, cls = _read(o)
        images = _train_images(jpg, o) if o.train else _eval_images(jpg, o)
        pipe.set_outputs(images, fn.pad(cls, fill_value=0))  # type: ignore[no-untyped-call]
    return pipe
