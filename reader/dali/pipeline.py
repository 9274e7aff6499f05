"""The DALI graph over a dataset's shards: `fn.readers.webdataset` over tars, or
`fn.readers.tfrecord` over record shards (one Example per sample), or the samples fastpack's order
feeds through `fn.external_source` (feed.py); then decode, resize, crop.

`device="cpu"` keeps every operator on the CPU (`device_id=None`, no CUDA needed) and outputs
uint8 HWC images. `device="gpu"` decodes with nvJPEG (`device="mixed"`), resizes and normalizes on
the GPU and outputs float32 CHW; the tests run without a GPU, and benchmarks/gpu/GPU.md records that
path run on one and checked against the CPU's, masks included.

Extra fields (fields.py) are further members of the same samples. The transform builds the images,
and the masks that follow them, from the operators here (`DaliTransform.pictures`,
transforms.py): in training one crop window (`fn.random_crop_generator`, the generator
`image_random_crop` uses) slices both, one coin flips both; in evaluation both are resized and
centre-cropped alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from fastpack.formats.tfrecord import KEY_FEATURE, LABEL_FEATURE
from nvidia.dali import fn, types
from nvidia.dali.data_node import DataNode
from nvidia.dali.pipeline import Pipeline

from .fields import (
    IMAGE_SHAPE,
    IMAGE_SOURCE,
    PNG_BIT_DEPTH,
    RECORD_KEY,
    SAMPLE_INDEX,
    output_names,
)
from .options import LABEL_FIELD, READER_NAME, PipelineOptions

__all__ = ["READER_NAME", "build_pipeline"]

Window = tuple[DataNode, DataNode]  # (anchor, shape) of a crop, in (height, width) order
_WINDOW_OUTPUTS = 2  # fn.random_crop_generator's: anchor and shape
Feed = Callable[[], Any]  # an external source in batches (feed.py's `SampleFeed`)


def _reader_options(o: PipelineOptions) -> dict[str, Any]:
    """Sharding, shuffling and padding, the same for both readers.

    Every rank reads ceil(N / num_shards) samples per epoch (`pad_last_batch` repeats a shard's
    last sample). With `shuffle`, the order of the shard files is reshuffled every epoch with
    the same seed on every rank, so that ranks still split each epoch's samples between them,
    and samples are drawn at random from a buffer of `initial_fill`.
    """
    return {
        "name": READER_NAME,
        "shard_id": o.shard_id,
        "num_shards": o.num_shards,
        "pad_last_batch": True,
        "random_shuffle": o.shuffle,
        "initial_fill": o.initial_fill,
        "shuffle_after_epoch": o.shuffle,
        "shuffle_after_epoch_seed": o.seed if o.shuffle else None,
        "dont_use_mmap": o.dont_use_mmap,
    }


def _fed(o: PipelineOptions, feed: Feed) -> dict[str, DataNode]:
    """The members of this rank's samples from `feed` (feed.py), in batches: the image and
    each mask's png bytes (uint8), and each sample's index in the dataset (int64 (1,))."""
    masks = [f.name for f in o.fields if f.kind == "mask"]
    names = [o.field, SAMPLE_INDEX, *masks]
    uint8, int64 = types.DALIDataType.UINT8, types.DALIDataType.INT64
    outputs = fn.external_source(
        source=feed,
        num_outputs=len(names),
        batch=True,
        ndim=[1] * len(names),
        dtype=[uint8, int64, *[uint8] * len(masks)],
    )
    if not isinstance(outputs, Sequence) or len(outputs) != len(names):
        raise RuntimeError(f"fn.external_source returned {outputs!r}, expected {len(names)}")
    return dict(zip(names, outputs, strict=True))


def _read(o: PipelineOptions) -> dict[str, DataNode]:
    """The members of this rank's samples, as bytes, by extension: the image (`o.field`),
    `cls` and the extra fields; from record shards the labels as int64 (1,) instead, and the
    keys (`RECORD_KEY`).

    A member that a tar's sample lacks is an error, but for optional fields, whose absent
    members come out empty (`FieldBatch` tells them apart by their source info).
    """
    if o.records:
        return _read_records(o)
    extensions = [o.field, LABEL_FIELD, *(f.name for f in o.fields)]
    outputs = fn.readers.webdataset(
        paths=list(o.paths),
        index_paths=list(o.index_paths),
        ext=extensions,
        dtypes=[types.DALIDataType.UINT8] * len(extensions),
        missing_component_behavior="empty" if any(f.optional for f in o.fields) else "error",
        **_reader_options(o),
    )
    if not isinstance(outputs, Sequence) or len(outputs) != len(extensions):
        raise RuntimeError(
            f"fn.readers.webdataset returned {outputs!r}, expected {len(extensions)} outputs"
        )
    return dict(zip(extensions, outputs, strict=True))


def _read_records(o: PipelineOptions) -> dict[str, DataNode]:
    """`_read` from record shards: each field's feature as bytes (a feature a record lacks
    comes out as a 0-d tensor: `_outputs` tells it by its shape), the label from
    `image/class/label`."""
    from nvidia.dali import tfrecord  # noqa: PLC0415 -- on use: only record shards need DALI's TFRecord reader

    names = [o.field, *(f.name for f in o.fields)]
    features = {o.feature(n): tfrecord.FixedLenFeature([], tfrecord.string, "") for n in names}
    features[KEY_FEATURE] = tfrecord.FixedLenFeature([], tfrecord.string, "")
    features[LABEL_FEATURE] = tfrecord.FixedLenFeature([1], tfrecord.int64, -1)
    outputs: Any = fn.readers.tfrecord(  # a dict by feature name (its stubs say otherwise)
        path=list(o.paths),
        index_path=list(o.index_paths),
        features=features,
        **_reader_options(o),
    )
    if not isinstance(outputs, Mapping) or set(outputs) != set(features):
        raise RuntimeError(f"fn.readers.tfrecord returned {outputs!r}, expected {list(features)}")
    members = {n: outputs[o.feature(n)] for n in names}
    members[LABEL_FIELD] = outputs[LABEL_FEATURE]
    members[RECORD_KEY] = outputs[KEY_FEATURE]
    return members


def _one(node: DataNode | Sequence[DataNode] | None) -> DataNode:
    """The single output of an operator (DALI's stubs type them all as maybe-several)."""
    if not isinstance(node, DataNode):
        raise TypeError(f"expected one DALI output, got {node!r}")
    return node


def _decoder_options(o: PipelineOptions) -> dict[str, Any]:
    """The arguments both decoders take: device, RGB output, the transform's IDCT and chroma
    upsampling."""
    gpu = o.device == "gpu"
    return {
        "device": "mixed" if gpu else "cpu",
        "output_type": types.DALIImageType.RGB,
        **o.transform.decoder_args(gpu),
    }


_ABSOLUTE_WINDOW: dict[str, Any] = {
    "axis_names": "HW",
    "normalized_anchor": False,
    "normalized_shape": False,
}
_NEAREST: dict[str, Any] = {"interp_type": types.DALIInterpType.INTERP_NN, "antialias": False}


class _Operators:
    """The operators a transform builds its images and masks from (`transforms.Operators`),
    on the device of pipeline options `o`."""

    def __init__(self, o: PipelineOptions) -> None:
        self.o = o

    def coin_flip(self, probability: float) -> DataNode:
        return _one(fn.random.coin_flip(probability=probability))

    def decode(self, jpg: DataNode) -> DataNode:
        return _one(fn.decoders.image(jpg, **_decoder_options(self.o)))

    def decode_random_crop(self, jpg: DataNode, window: Mapping[str, Any]) -> DataNode:
        return _one(fn.decoders.image_random_crop(jpg, **window, **_decoder_options(self.o)))

    def crop_window(self, shape: DataNode, window: Mapping[str, Any]) -> Window:
        """What `image_random_crop` draws (same generator and arguments)."""
        drawn = fn.random_crop_generator(shape, **window)
        if not isinstance(drawn, Sequence) or len(drawn) != _WINDOW_OUTPUTS:
            raise RuntimeError(f"fn.random_crop_generator returned {drawn!r}, expected 2 outputs")
        return drawn[0], drawn[1]

    def decode_window(self, jpg: DataNode, window: Window) -> DataNode:
        options = _decoder_options(self.o)
        return _one(fn.decoders.image_slice(jpg, *window, **_ABSOLUTE_WINDOW, **options))

    def decode_mask(self, png: DataNode) -> DataNode:
        device = "mixed" if self.o.device == "gpu" else "cpu"
        return _one(fn.decoders.image(png, device=device, output_type=types.DALIImageType.ANY_DATA))

    def slice_window(self, masks: DataNode, window: Window) -> DataNode:
        """A window past a smaller mask's edge is padded with zeros: `FieldBatch` refuses such
        masks."""
        return _one(fn.slice(masks, *window, **_ABSOLUTE_WINDOW, out_of_bounds_policy="pad"))

    def resize(self, images: DataNode, size: int, *, nearest: bool = False) -> DataNode:
        filters = _NEAREST if nearest else {}
        return _one(fn.resize(images, resize_x=size, resize_y=size, **filters))

    def resize_shorter(self, images: DataNode, size: int, *, nearest: bool = False) -> DataNode:
        filters = _NEAREST if nearest else {}
        return _one(fn.resize(images, resize_shorter=size, **filters))

    def finish(
        self, images: DataNode, *, mirror: DataNode | int = 0, crop: Sequence[float] | None = None
    ) -> DataNode:
        return _finish(images, self.o, mirror, crop)

    def finish_mask(
        self, masks: DataNode, *, mirror: DataNode | int = 0, crop: Sequence[float] | None = None
    ) -> DataNode:
        return _finish_mask(masks, self.o, mirror, crop)


def _finish_mask(
    masks: DataNode,
    o: PipelineOptions,
    mirror: DataNode | int = 0,
    crop: Sequence[float] | None = None,
) -> DataNode:
    """Crop and flip, values kept (uint8), in the images' layout: HWC on the CPU, CHW on the
    GPU."""
    layout = "CHW" if o.device == "gpu" else "HWC"
    return fn.crop_mirror_normalize(
        masks, crop=crop, mirror=mirror, dtype=types.DALIDataType.UINT8, output_layout=layout
    )


def _finish(
    images: DataNode,
    o: PipelineOptions,
    mirror: DataNode | int = 0,
    crop: Sequence[float] | None = None,
) -> DataNode:
    """Crop and flip; on the GPU also normalize to float32 CHW, on the CPU stay uint8 HWC (as a
    mask does)."""
    if o.device == "cpu":
        return _finish_mask(images, o, mirror, crop)
    return fn.crop_mirror_normalize(
        images,
        crop=crop,
        mirror=mirror,
        dtype=types.DALIDataType.FLOAT,
        output_layout="CHW",
        mean=[255 * m for m in o.mean],
        std=[255 * s for s in o.std],
    )


def _padded(member: DataNode) -> DataNode:
    """A batch of byte strings zero-padded to the widest."""
    return _one(fn.pad(member, fill_value=0))


def _source(member: DataNode) -> DataNode:
    """Each member's DALI source info (`<tar>:<offset>:<name>`; empty for an absent member;
    from record shards, the sample's: `<file> at index <record>`)."""
    return _padded(_one(fn.get_property(member, key="source_info")))


def _flat(member: DataNode) -> DataNode:
    """A record's feature as 1-D bytes (a lacking feature's 0-d tensor as one byte)."""
    return _one(fn.reshape(member, shape=[-1]))


def _bytes_outputs(name: str, member: DataNode, o: PipelineOptions) -> dict[str, DataNode]:
    """A `bytes` field's outputs: the zero-padded bytes, their count (from record shards -1
    where a record lacks the feature) and, from tars, the members' source info."""
    if not o.records:
        return {
            name: _padded(member),
            f"{name}/size": member.shape(),  # type: ignore[no-untyped-call]
            f"{name}/source": _source(member),
        }
    size = member.shape()  # type: ignore[no-untyped-call]
    return {name: _padded(_flat(member)), f"{name}/size": _one(fn.pad(size, fill_value=-1))}


def _outputs(members: dict[str, DataNode], o: PipelineOptions) -> dict[str, DataNode]:
    """Every output `output_names` lists, by name."""
    nodes = _pictures(members, o)
    if o.fed:
        nodes[SAMPLE_INDEX] = members[SAMPLE_INDEX]
        return nodes
    label = members[LABEL_FIELD]
    nodes[LABEL_FIELD] = label if o.records else _padded(label)
    if o.fields:
        nodes[IMAGE_SOURCE] = _source(members[o.field])
        if o.records:
            nodes[RECORD_KEY] = _padded(_flat(members[RECORD_KEY]))
    for f in o.fields:
        member = members[f.name]
        if f.kind == "class":
            nodes[f.name] = _padded(member)
        elif f.kind == "bytes":
            nodes.update(_bytes_outputs(f.name, member, o))
    return nodes


def _pictures(members: dict[str, DataNode], o: PipelineOptions) -> dict[str, DataNode]:
    """The images, and the masks that follow them, with what `FieldBatch` checks masks by."""
    jpg = members[o.field]
    shape = _one(fn.peek_image_shape(jpg))
    masks = [f.name for f in o.fields if f.kind == "mask"]
    pngs = {m: members[m] for m in masks}
    images, cropped = o.transform.pictures(_Operators(o), jpg, shape, pngs)
    nodes = {"images": images, **cropped}
    if masks:
        nodes[IMAGE_SHAPE] = shape
    for m in masks:
        nodes[f"{m}/header"] = _one(
            fn.slice(
                members[m], start=[PNG_BIT_DEPTH], shape=[2], axes=[0], out_of_bounds_policy="pad"
            )
        )
        nodes[f"{m}/shape"] = _one(fn.peek_image_shape(members[m]))
    return nodes


def build_pipeline(o: PipelineOptions, feed: Feed | None = None) -> Pipeline:
    """A pipeline whose outputs are `output_names(o.fields, o.records, o.fed)`: images, the
    labels (tars: `cls` bytes zero-padded to the batch's widest; records: int64 (1,)), and what
    the extra fields need; with `o.fed`, the samples of `feed` (feed.py): images, the samples'
    indices and what the masks need."""
    if o.fed != (feed is not None):
        raise ValueError("a pipeline of fed samples needs a feed, and only it takes one")
    pipe = Pipeline(  # type: ignore[no-untyped-call]
        batch_size=o.batch_size,
        num_threads=o.num_threads,
        device_id=o.device_id if o.device == "gpu" else None,
        seed=o.seed + 7919 * o.shard_id,  # augmentations differ between ranks
        prefetch_queue_depth=o.prefetch_queue_depth,
    )
    with pipe:
        nodes = _outputs(_read(o) if feed is None else _fed(o, feed), o)
        outputs = output_names(o.fields, o.records, o.fed)
        pipe.set_outputs(*(nodes[name] for name in outputs))  # type: ignore[no-untyped-call]
    return pipe
