"""What the DALI loader checks before it builds a pipeline: the dataset's shard files and
fields, the split over ranks, DALI's threads and queue, and one seed for order and crops. Each
refusal names the dataset and what DALI would need."""

from __future__ import annotations

from fastpack.formats import DatasetFiles, DatasetNotFoundError, TruncatedFileError

from ..errors import MissingFieldError
from ..map_style.dataset import Dataset
from .options import LABEL_FIELD, PipelineOptions
from .transforms import DaliTransform


def shard_files(ds: DatasetFiles) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Paths of every non-empty shard file (tar or TFRecord, as the manifest names them) and
    its `.idx` (a shard whose inputs were all rejected holds no sample), checked to exist, and
    each shard to have its recorded size: DALI's own messages name neither file, or blame the
    `.idx` for a short shard."""
    tars: list[str] = []
    indexes: list[str] = []
    for shard, info in enumerate(ds.manifest.shards):
        if info.samples == 0:
            continue
        for path, kept in ((ds.shard_path(shard), tars), (ds.shard_index_path(shard), indexes)):
            if not path.is_file():
                raise DatasetNotFoundError(f"{path}: shard file listed in the manifest is missing")
            kept.append(str(path))
        size = ds.shard_path(shard).stat().st_size
        if size < info.bytes:
            raise TruncatedFileError(
                f"{ds.shard_path(shard)}: shard has {size} bytes, the manifest records {info.bytes}"
            )
    return tuple(tars), tuple(indexes)


def label_field(ds: DatasetFiles) -> str:
    """The field DALI reads the labels from: the `cls` members of tars; in record shards the
    schema's label field, whose value is `image/class/label` (or `cls` if there is none, for
    the error that says so)."""
    label = ds.manifest.schema.label_field if ds.records else None
    return label or LABEL_FIELD


def check_fields(ds: DatasetFiles, field: str) -> None:
    """Refuse a dataset whose samples lack what the loader reads: the image field `field` and
    the label, both required, the image a jpeg in record shards."""
    schema, label = ds.manifest.schema, label_field(ds)
    missing = [f for f in (field, label) if f not in schema]
    if missing:
        raise MissingFieldError(
            f"{ds.root}: samples hold fields {list(schema.names)}, no {' or '.join(missing)}; the "
            f"DALI reader needs the image field {field!r} and {label!r}"
        )
    if ds.records and schema[field].type != "jpeg":
        raise ValueError(
            f"{ds.root}: field {field!r} is {schema[field].type}; the DALI reader decodes a "
            "jpeg field"
        )
    optional = [f for f in (field, label) if schema[f].optional]
    if optional:
        raise MissingFieldError(
            f"{ds.root}: field {optional[0]!r} is optional; the DALI reader needs an image and "
            "a label in every sample"
        )


def check_split(root: str, o: PipelineOptions, n: int) -> None:
    """Refuse to split `n` samples over `o`'s ranks where a rank would read nothing."""
    if n < o.num_shards:
        raise ValueError(
            f"{root}: {n} samples cannot be split over {o.num_shards} shards "
            "(every shard needs at least one sample)"
        )
    if o.drop_last and n // o.num_shards < o.batch_size:
        raise ValueError(
            f"{root}: with drop_last, {n} samples over {o.num_shards} shards leave "
            f"{n // o.num_shards} per shard, less than one batch of {o.batch_size}"
        )


def check_threads(where: str, num_workers: int | None, prefetch_factor: int) -> None:
    """`num_workers` (DALI's threads) and `prefetch_factor` (its queue depth), as DALI takes
    them."""
    if num_workers is not None and num_workers < 1:
        raise ValueError(
            f"{where} runs at least one DALI thread; num_workers={num_workers} (loading in "
            "the main process) has no DALI equivalent"
        )
    if prefetch_factor < 1:
        raise ValueError(
            f"{where}: prefetch_factor (DALI's prefetch_queue_depth) must be at least 1, "
            f"got {prefetch_factor}"
        )


def check_seed(dataset: Dataset, crop: DaliTransform, seed: int, where: str) -> None:
    """DALI draws shuffling and crops from one seed: a Dataset's random transform, whose crops
    its `seed` draws on the torch path, needs that seed to be the loader's."""
    if crop.random and dataset.seed != seed:
        raise ValueError(
            f"{where} draws shuffling and crops from one seed, but the Dataset's seed is "
            f"{dataset.seed} and the loader's seed is {seed}: give both the same value"
        )
