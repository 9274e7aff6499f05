"""DALI's iterator over one rank's pipeline, and DALI's errors on damaged files as the
`DaliReadError` that leads with the dataset. DALI is imported when an iterator is made."""

from __future__ import annotations

import re
from typing import Any

from ..errors import DaliReadError, MissingDependencyError
from .feed import SampleFeed
from .fields import output_names
from .options import READER_NAME, PipelineOptions


def dali_iterator(options: PipelineOptions, source: str, feed: SampleFeed | None = None) -> Any:
    """A `DALIGenericIterator` over a new pipeline; it builds the pipeline and reads one batch
    (DALI's errors there, on damaged files of dataset `source`, raise `DaliReadError`). Over
    `feed` it only builds the pipeline: DALI asks the feed for batches once an iteration has
    begun, ends its epoch when the feed does (any last batch as it is) and is reset by the
    loader, never by itself (the next epoch's batches depend on `set_epoch` and on a resume)."""
    try:
        from nvidia.dali.plugin.base_iterator import LastBatchPolicy  # noqa: PLC0415 -- optional: DALI
        from nvidia.dali.plugin.pytorch import DALIGenericIterator  # noqa: PLC0415 -- optional: DALI

        from .pipeline import build_pipeline  # noqa: PLC0415 -- optional: DALI
    except ImportError as e:
        raise MissingDependencyError(
            f"the DALI reader needs NVIDIA DALI and torch (pip install 'fastpack[dali,torch]'): {e}"
        ) from e
    pipeline = build_pipeline(options, feed)
    if feed is not None:
        names = output_names(options.fields, fed=True)
        return DALIGenericIterator([pipeline], names, prepare_first_batch=False)
    try:
        return DALIGenericIterator(
            [pipeline],
            output_names(options.fields, options.records),
            reader_name=READER_NAME,
            last_batch_policy=LastBatchPolicy.DROP if options.drop_last else LastBatchPolicy.FILL,
            auto_reset=True,
        )
    except RuntimeError as e:
        raise read_error(source, e) from e


_DALI_DETAIL_ENDS = ("C++ context", "Stacktrace")  # what follows is DALI's own source and stack
_DALI_BOILERPLATE = ("Current pipeline object", "Critical error")


def read_error(source: str, error: RuntimeError) -> DaliReadError:
    """DALI's error, which names the operator and the file but buries them in its traceback and
    C++ context, as a `DaliReadError` that leads with the dataset."""
    text = str(error)
    operator = re.search(r"operator `([^`]+)`", text)
    found = []
    for raw in text.split("encountered:", 1)[-1].splitlines():
        line = raw.strip()
        if line.startswith(_DALI_DETAIL_ENDS):
            break
        if line and not line.startswith(_DALI_BOILERPLATE):
            found.append(line)
    where = f" in {operator.group(1)}" if operator else ""
    return DaliReadError(
        f"{source}: DALI failed{where}: {' '.join(found) or text.strip()} "
        f"(`fastpack verify --decode {source}` lists damaged files)"
    )
