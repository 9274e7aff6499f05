"""A small frozen version-2 dataset (tests/formats/golden_v2/), written by the writers of the
version that introduced it: every field type, an optional field absent from half the samples, a
zstd field with a trained dictionary and one without.

If the writers change a byte, or the readers stop reading what was written before, these fail:
that is format drift and needs a new format version, not a new golden dataset. (The compressed
members are libzstd's output; a libzstd that compresses differently would fail the first test
while the second still passes.)
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from fastpack.formats import ABSENT, AbsentFieldError, DatasetFiles, scan_members
from fastpack.formats.checksum import file_sha256
from fastpack.formats.wds_index import read_wds_index

from . import _v2
from ._golden_v2 import NUM_SAMPLES, SCHEMA, samples, write_golden_v2
from ._values import assert_read_back

GOLDEN = Path(__file__).parent / "golden_v2"
DICTIONARY = GOLDEN / "dicts" / "caption.txt.zst.zdict"


def _files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_writers_reproduce_the_golden_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every file, the manifest included. The dictionary is the golden one: training it is the
    compiler's business (and zstd's), not the format's."""
    monkeypatch.setattr(_v2, "train_dictionary", lambda data, size: DICTIONARY.read_bytes())
    write_golden_v2(tmp_path)
    assert _files(tmp_path) == _files(GOLDEN)
    for name in _files(GOLDEN):
        assert (tmp_path / name).read_bytes() == (GOLDEN / name).read_bytes(), name


def test_readers_read_the_golden_dataset() -> None:
    ds = DatasetFiles(GOLDEN)
    manifest, index = ds.manifest, ds.index
    assert (manifest.version, index.version, len(ds)) == (2, 2, NUM_SAMPLES)
    assert manifest.schema.names == SCHEMA.names
    assert manifest.schema.label_field == "cls"
    dictionary = manifest.schema["caption.txt.zst"].zstd
    assert dictionary is not None
    assert dictionary.dictionary is not None
    assert dictionary.dictionary.sha256 == file_sha256(DICTIONARY)
    shards = [ds.shard_path(k).read_bytes() for k in range(len(manifest.shards))]
    for i, written in enumerate(samples()):
        shard = shards[int(index.shard[i])]
        assert index.key(i) == f"{i:09d}"
        assert index.source(i) == f"sample-{i}"
        assert int(index.label[i]) == written["cls"]
        for spec in manifest.schema.fields:
            assert bool(index.present(spec.name)[i]) is (spec.name in written)
            if spec.name not in written:
                assert int(index.offsets(spec.name)[i]) == ABSENT
                assert (int(index.sizes(spec.name)[i]), int(index.crc32(spec.name)[i])) == (0, 0)
                with pytest.raises(AbsentFieldError, match=rf"sample {i} has no '{spec.name}'"):
                    index.locate(i, spec.name, len(shard))
                continue
            _, offset, size = index.locate(i, spec.name, len(shard))
            assert_read_back(
                spec, ds.codec(spec.name).decode(shard[offset : offset + size]), written[spec.name]
            )


def test_shard_indexes_list_the_members_present() -> None:
    ds = DatasetFiles(GOLDEN)
    names = []
    for k in range(len(ds.manifest.shards)):
        members = [m for sample in read_wds_index(ds.shard_index_path(k)) for m in sample]
        assert members == list(scan_members(ds.shard_path(k)))
        names += [m.name for m in members]
    expected = [f"{i:09d}.{f}" for i, s in enumerate(samples()) for f in SCHEMA.names if f in s]
    assert names == expected
    assert "000000001.meta.json.zst" not in names
    assert np.count_nonzero(ds.index.present("meta.json.zst")) == NUM_SAMPLES // 2
