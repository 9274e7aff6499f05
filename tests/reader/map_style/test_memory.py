"""Opening and reading a dataset costs memory independent of its number of samples."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from fastpack.formats import (
    INDEX_NAME,
    MANIFEST_NAME,
    IndexPart,
    IndexWriter,
    Manifest,
    ShardInfo,
    write_manifest,
)
from fastpack.formats.layout import sample_key, shard_idx_name, shard_tar_name
from fastpack.formats.schema import FileInfo
from fastpack.formats.tar_shard import TarShardWriter

from tests.conftest import jpeg_bytes

REAL_SAMPLES = 4
NOT_CHECKED = "0" * 64  # the reader does not hash files

MEASURE = textwrap.dedent(
    """
    import json, sys
    from fastpack.reader import Dataset, RandomResizedCrop

    def status():
        fields = dict(line.split(":", 1) for line in open("/proc/self/status"))
        return {k: int(fields[k].split()[0]) for k in ("VmRSS", "RssAnon")}

    before = status()
    ds = Dataset(sys.argv[1], transform=RandomResizedCrop(32))
    n = len(ds)
    for i in (0, n // 2, n - 1, 12345 % n):
        ds[i]
    ds.__getitems__([1, n // 3, n - 2])
    after = status()
    print(json.dumps({k: after[k] - before[k] for k in before}))
    """
)


def write_dataset(root: Path, num_samples: int) -> Path:
    """A dataset of `num_samples` index rows, all pointing at the few samples of one real
    shard (the reader does not require distinct payloads)."""
    (root / "shards").mkdir(parents=True)
    with (root / shard_tar_name(0)).open("wb") as f:
        writer = TarShardWriter(f)
        members = [
            writer.add_sample(
                sample_key(i, 9), [("jpg", jpeg_bytes(48, 64, seed=i)), ("cls", b"0")]
            )
            for i in range(REAL_SAMPLES)
        ]
        shard_bytes = writer.finish()
    which = np.arange(num_samples) % REAL_SAMPLES
    columns = {
        suffix: {
            ext: np.array([getattr(m[k], attr) for m in members], "<u8")[which]
            for k, ext in enumerate(("jpg", "cls"))
        }
        for suffix, attr in (("offset", "data_offset"), ("size", "size"))
    }
    key_blob = np.frombuffer("".join(f"{i:09d}" for i in range(num_samples)).encode(), np.uint8)
    part = IndexPart(
        shard=0,
        labels=np.zeros(num_samples, "<i8"),
        key_blob=key_blob,
        key_offsets=np.arange(num_samples + 1, dtype="<u8") * 9,
        source_blob=np.zeros(0, np.uint8),
        source_offsets=np.zeros(num_samples + 1, "<u8"),
        offsets=columns["offset"],
        sizes=columns["size"],
        crc32={ext: np.zeros(num_samples, "<u4") for ext in ("jpg", "cls")},
    )
    with IndexWriter(
        path=root / INDEX_NAME,
        num_samples=num_samples,
        num_shards=1,
        fields=("jpg", "cls"),
        key_blob_size=len(key_blob),
        source_blob_size=0,
    ) as index:
        index.append(part)
    index_bytes = (root / INDEX_NAME).stat().st_size
    shard = ShardInfo(
        name=shard_tar_name(0),
        index_name=shard_idx_name(0),
        samples=num_samples,
        bytes=shard_bytes,
        sha256=NOT_CHECKED,
    )
    manifest = Manifest(
        num_samples=num_samples,
        fields=("jpg", "cls"),
        classes=(),
        key_width=9,
        shards=(shard,),
        index=FileInfo(name=INDEX_NAME, bytes=index_bytes, sha256=NOT_CHECKED),
    )
    write_manifest(root / MANIFEST_NAME, manifest)
    return root


def growth(root: Path) -> dict[str, int]:
    """kB by which VmRSS and RssAnon grow while a fresh process opens and reads `root`."""
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(root)], capture_output=True, text=True, check=True
    )
    result: dict[str, int] = json.loads(done.stdout)
    return result


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
def test_memory_does_not_grow_with_samples(tmp_path: Path) -> None:
    small = growth(write_dataset(tmp_path / "small", 10_000))
    large = growth(write_dataset(tmp_path / "large", 1_000_000))
    # 1M samples: the index alone is ~70 MB, so copying even one column (8 MB) would show
    assert large["RssAnon"] - small["RssAnon"] < 3 * 1024, (small, large)
    assert large["VmRSS"] - small["VmRSS"] < 6 * 1024, (small, large)
