"""Row sizes of a list file at a URL, estimated instead of asked for one by one.

A local list stats each image; at a URL that would be one request per row (50 million for a
50-million-line list). Instead the sizes of the first `SIZE_SAMPLE` rows' objects (the image
and any file fields) are asked for, in parallel, and every row gets their mean (rounded; an
object that is missing or may not be read counts 0, as a local file that cannot be stat'ed
does). The estimate only sets how many samples a shard holds; shards still hold equal numbers
of samples, but their bytes follow the real sizes: where the first rows are unlike the rest
(a list sorted by class, say), shards come out further from `--shard-size` than a local
build's. It is deterministic for a given list and store.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from itertools import chain, islice

from fastpack.storage.objects import Objects
from fastpack.storage.url_paths import resolve_url

from ..sample_fields import FileRef, unpack_fields
from ..scan import PlanRow

SIZE_SAMPLE = 256
_THREADS = 16


def _row_size(objects: Objects, root: str, row: PlanRow) -> int:
    paths = [os.fsdecode(row.source)]
    paths += [v.path for v in unpack_fields(row.fields).values() if isinstance(v, FileRef)]
    total = 0
    for path in paths:
        with contextlib.suppress(PermissionError):
            total += objects.size(resolve_url(root, path)) or 0
    return total


def with_estimated_sizes(rows: Iterator[PlanRow], root: str) -> Iterator[PlanRow]:
    """`rows` (relative to the URL `root`), each with the mean size of the first
    `SIZE_SAMPLE`."""
    head = list(islice(rows, SIZE_SAMPLE))
    if not head:
        return
    objects = Objects()
    with ThreadPoolExecutor(min(_THREADS, len(head))) as pool:
        sizes = list(pool.map(lambda row: _row_size(objects, root, row), head))
    mean = (sum(sizes) + len(sizes) // 2) // len(sizes)
    for row in chain(head, rows):
        yield row._replace(size=mean)
