"""The options of one rank's DALI pipeline; free of DALI imports so that it loads cheaply."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Literal

from ..image.normalize import IMAGENET_MEAN, IMAGENET_STD
from .transforms import DaliTransform

READER_NAME = "shards"
LABEL_FIELD = "cls"  # the label member of tar shards; also the pipeline's output of labels
Device = Literal["cpu", "gpu"]
# How the pipeline returns an extra field: a mask decoded and cropped with the image, a class
# parsed into int64 labels, anything else as each member's bytes.
FieldKind = Literal["mask", "class", "bytes"]
CHANNELS = 3  # RGB: what `mean` and `std` give a value for


@dataclass(frozen=True, kw_only=True)
class FieldOutput:
    """An extra field the pipeline reads beside the image and the label: its member extension,
    how it is returned, and whether samples may lack it."""

    name: str
    kind: FieldKind
    optional: bool = False


@dataclass(frozen=True, kw_only=True)
class DaliOptions:
    """DALI's own settings, which mean nothing on the torch path (the rest of a DALI loader is
    said as for the torch loader: the transform, batch size, shuffle, seed, ...).

    `device="gpu"` decodes with nvJPEG on GPU `device_id` (default: LOCAL_RANK) and returns
    float32 NCHW normalized by `mean` and `std` (per channel, 0..1 scale, as `to_float`);
    `"cpu"` (default) returns uint8 NHWC. `initial_fill`: the buffer DALI's own reader (over a
    path) draws shuffled samples from. `malloc_mmap_threshold`: the process's malloc mmap
    threshold in bytes, which keeps host memory flat (make.py); None leaves malloc alone.
    """

    device: Device = "cpu"
    device_id: int | None = None
    mean: tuple[float, ...] = IMAGENET_MEAN
    std: tuple[float, ...] = IMAGENET_STD
    initial_fill: int = 1024
    malloc_mmap_threshold: int | None = 256 * 1024

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "gpu"):
            raise ValueError(f"device must be 'cpu' or 'gpu', got {self.device!r}")
        if len(self.mean) != CHANNELS or len(self.std) != CHANNELS or min(self.std) <= 0:
            raise ValueError(f"mean and std need 3 values, std > 0; got {self.mean}, {self.std}")
        if self.initial_fill < 1:
            raise ValueError(f"initial_fill must be at least 1, got {self.initial_fill}")

    @classmethod
    def from_keywords(cls, keywords: dict[str, Any], where: str) -> DaliOptions:
        """`DaliOptions(**keywords)`; a ValueError starting with `where` that names the
        keywords it does not take (a torch DataLoader option, say) and lists those it does."""
        names = [f.name for f in fields(cls)]
        unknown = sorted(set(keywords) - set(names))
        if unknown:
            raise ValueError(
                f"{where} cannot honour {', '.join(unknown)}: not options of the DALI loader "
                f"(torch DataLoader options do not apply); DaliOptions takes {', '.join(names)}"
            )
        return cls(**keywords)


@dataclass(frozen=True, kw_only=True)
class PipelineOptions:
    """Everything that shapes one rank's pipeline, checked on construction."""

    paths: tuple[str, ...]
    index_paths: tuple[str, ...]
    batch_size: int
    transform: DaliTransform  # decode, crop, resize, flip (transforms.py)
    shuffle: bool
    drop_last: bool
    device: Device
    device_id: int | None
    num_threads: int
    seed: int
    shard_id: int
    num_shards: int
    initial_fill: int
    prefetch_queue_depth: int
    dont_use_mmap: bool
    mean: tuple[float, ...]  # per channel, 0..1 scale, as `to_float`
    std: tuple[float, ...]
    field: str = "jpg"  # the image member's extension
    fields: tuple[FieldOutput, ...] = ()  # extra fields, returned beside images and labels
    label: str = LABEL_FIELD  # the label field (tars: its `cls` members; records: the schema's)
    # Record shards (TFRecord, `fn.readers.tfrecord`): the Example feature of the image field and
    # of each extra field, `(field, feature)`; empty for tar shards (`fn.readers.webdataset`).
    features: tuple[tuple[str, str], ...] = ()
    # The samples come from fastpack's order through `fn.external_source` (feed.py), not from
    # DALI's reader: `paths`, `index_paths`, `initial_fill`, `dont_use_mmap` and `features` are
    # then unused (empty), and the labels and non-mask fields are read from the dataset.
    fed: bool = False

    @property
    def train(self) -> bool:
        """Whether DALI draws crops and flips (the training pipeline), else centre crops."""
        return self.transform.random

    @property
    def records(self) -> bool:
        """Whether the shards are TFRecord files of Examples (else tars)."""
        return bool(self.features)

    def feature(self, name: str) -> str:
        """The Example feature that holds field `name` in a record dataset."""
        return dict(self.features)[name]

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "gpu"):
            raise ValueError(f"device must be 'cpu' or 'gpu', got {self.device!r}")
        for name in ("batch_size", "num_threads", "initial_fill", "prefetch_queue_depth"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if not self.field or ";" in self.field or self.field == self.label:
            raise ValueError(f"field must name the image member, not {self.field!r}")
        names = [f.name for f in self.fields]
        taken = {self.field, self.label}
        if len(set(names)) != len(names) or taken & set(names) or any(";" in n for n in names):
            raise ValueError(
                f"fields must be distinct member extensions other than {self.field!r} and "
                f"{self.label!r}, got {names}"
            )
        unnamed = [
            n for n in (self.field, *names) if self.features and n not in dict(self.features)
        ]
        if unnamed:
            raise ValueError(f"record shards: no Example feature given for fields {unnamed}")
        if self.fed and (self.paths or self.features):
            raise ValueError("fed samples come from the feed, not from shard paths or features")
        if not self.transform.fancy_upsampling and self.device == "cpu":
            raise ValueError(
                "fancy_upsampling=False (a transform's fastupsample=True) needs device='gpu': "
                "DALI's CPU decoder always upsamples chroma smoothly"
            )
