"""Sources of a build: ImageFolder trees, list files (CSV, TSV, JSONL) and webdataset tars, each
scanned once, streaming, into `PlanRow`s in the source's canonical order."""

from .detect import SOURCE_FORMATS, detect_kind, open_source
from .scan import PlanRow, SourceScan

__all__ = ["SOURCE_FORMATS", "PlanRow", "SourceScan", "detect_kind", "open_source"]
