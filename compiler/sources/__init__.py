"""Sources of a build: ImageFolder trees, list files (CSV, TSV, JSONL), webdataset tars, COCO
instances files, Parquet files and TFRecord files of `tf.train.Example`s, each scanned once,
streaming, into `PlanRow`s in the source's canonical order, with the fields of each sample beyond
its image and label.

One folder per format (folder/, list_file/, wds/, tfrecord/, parquet/, coco/), each with its
`Source` (`protocol`) in its `source` module; `registry.SOURCES` holds them, and detection,
`BuildOptions.source_format` and the CLI's `--format` choices read it."""

from .detect import detect_kind, open_source
from .left_out import LeftOutWarning
from .protocol import Source
from .registry import SOURCES, register_source, source_formats
from .scan import PlanRow, SourceOptions, SourceScan

__all__ = [
    "SOURCES",
    "LeftOutWarning",
    "PlanRow",
    "Source",
    "SourceOptions",
    "SourceScan",
    "detect_kind",
    "open_source",
    "register_source",
    "source_formats",
]
