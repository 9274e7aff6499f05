"""The options of one rank's DALI pipeline; free of DALI imports so that it loads cheaply."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

READER_NAME = "shards"
LABEL_FIELD = "cls"  # the label member of tar shards; also the pipeline's output of labels
Device = Literal["cpu", "gpu"]
# How the pipeline returns an extra field: a mask decoded and cropped with the image, a class
# parsed into int64 labels, anything else as each member's bytes.
FieldKind = Literal["mask", "class", "bytes"]


@dataclass(frozen=True, kw_only=True)
class FieldOutput:
    """An extra field the pipeline reads beside the image and the label: its member extension,
    how it is returned, and whether samples may lack it."""

    name: str
    kind: FieldKind
    optional: bool = False


@dataclass(frozen=True, kw_only=True)
class PipelineOptions:
    """Everything that shapes one rank's pipeline, checked on construction."""

    paths: tuple[str, ...]
    index_paths: tuple[str, ...]
    batch_size: int
    train: bool
    shuffle: bool
    size: int
    resize_size: int
    device: Device
    device_id: int | None
    num_threads: int
    seed: int
    shard_id: int
    num_shards: int
    initial_fill: int
    prefetch_queue_depth: int
    dont_use_mmap: bool
    scale: tuple[float, float]
    ratio: tuple[float, float]
    mean: tuple[float, ...]  # per channel, 0..1 scale, as `to_float`
    std: tuple[float, ...]
    flip_prob: float = 0.5  # training only: probability of a horizontal flip
    field: str = "jpg"  # the image member's extension
    fast_idct: bool = False  # libjpeg-turbo's faster, less accurate IDCT
    fancy_upsampling: bool = True  # smooth chroma upsampling (the CPU decoder always does it)
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
    def records(self) -> bool:
        """Whether the shards are TFRecord files of Examples (else tars)."""
        return bool(self.features)

    def feature(self, name: str) -> str:
        """The Example feature that holds field `name` in a record dataset."""
        return dict(self.features)[name]

    def __post_init__(self) -> None:
        if self.device not in ("cpu", "gpu"):
            raise ValueError(f"device must be 'cpu' or 'gpu', got {self.device!r}")
        for name in ("batch_size", "size", "num_threads", "initial_fill", "prefetch_queue_depth"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.seed < 0:
            raise ValueError(f"seed must be >= 0, got {self.seed}")
        if self.resize_size < self.size:
            raise ValueError(f"resize_size {self.resize_size} must be at least size {self.size}")
        if len(self.mean) != 3 or len(self.std) != 3 or min(self.std) <= 0:
            raise ValueError(f"mean and std need 3 values, std > 0; got {self.mean}, {self.std}")
        _check_range("scale", self.scale, 1.0)
        _check_range("ratio", self.ratio, None)
        if not 0 <= self.flip_prob <= 1:
            raise ValueError(f"flip_prob must be in [0, 1], got {self.flip_prob}")
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
        if not self.fancy_upsampling and self.device == "cpu":
            raise ValueError(
                "fancy_upsampling=False needs device='gpu': DALI's CPU decoder always upsamples "
                "chroma smoothly"
            )


def _check_range(name: str, value: tuple[float, float], upper: float | None) -> None:
    low, high = value
    if not (0 < low <= high and (upper is None or high <= upper)):
        bound = f" <= {upper}" if upper is not None else ""
        raise ValueError(f"{name} must satisfy 0 < low <= high{bound}, got {value}")
