"""A small frozen dataset (tests/formats/golden/) written by an earlier version of the writers.

If the writers change a byte, or the readers stop reading what was written before, these fail:
that is format drift and needs a new format version, not a new golden file.
"""

from __future__ import annotations

from pathlib import Path

from fastpack.formats import DatasetFiles, scan_members
from fastpack.formats.wds_index import read_wds_index

from ._samples import LABELS, PAYLOADS, SOURCES, write_dataset_files

GOLDEN = Path(__file__).parent / "golden"
FILES = ("fastpack.json", "index.fpx", "shards/000000.tar", "shards/000000.idx")


def test_writers_reproduce_the_golden_bytes(tmp_path: Path) -> None:
    write_dataset_files(tmp_path)
    for name in FILES[1:]:
        assert (tmp_path / name).read_bytes() == (GOLDEN / name).read_bytes(), name


def test_readers_read_the_golden_dataset() -> None:
    ds = DatasetFiles(GOLDEN)
    assert ds.manifest.num_samples == len(ds) == len(PAYLOADS)
    shard = ds.shard_path(0).read_bytes()
    for i, payload in enumerate(PAYLOADS):
        _, offset, size = ds.index.locate(i, "jpg", len(shard))
        assert shard[offset : offset + size] == payload
        assert int(ds.index.label[i]) == LABELS[i]
        assert ds.index.source(i) == SOURCES[i]
    members = [m for sample in read_wds_index(ds.shard_index_path(0)) for m in sample]
    assert members == list(scan_members(ds.shard_path(0)))
