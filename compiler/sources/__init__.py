"""Sources of a build: ImageFolder trees, list files (CSV, TSV, JSONL), webdataset tars, COCO
instances files, Parquet files and TFRecord files of `tf.train.Example`s, each scanned once,
streaming, into `PlanRow`s in the source's canonical order, with the fields of each sample beyond
its image and label."""

from .detect import SOURCE_FORMATS, detect_kind, open_source
from .left_out import LeftOutWarning
from .scan import PlanRow, SourceOptions, SourceScan

__all__ = [
    "SOURCE_FORMATS",
    "LeftOutWarning",
    "PlanRow",
    "SourceOptions",
    "SourceScan",
    "detect_kind",
    "open_source",
]
