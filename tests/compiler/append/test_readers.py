"""Readers of an earlier version read on undisturbed while an append publishes a new one, and
a dataset whose compressed fields use trained zstd dictionaries grows with them."""

from __future__ import annotations

import threading
from pathlib import Path

import zstandard
from fastpack.compiler import BuildOptions, append, build
from fastpack.formats import DatasetFiles, read_manifest
from fastpack.reader import Dataset

from tests.compiler._helpers import QUIET
from tests.compiler.append._datasets import samples
from tests.compiler.test_fields_zstd import SCHEMA, caption, captions_list
from tests.compiler.test_resume import big_folder


def test_a_reader_of_version_1_reads_on_while_an_append_publishes(
    dataset: Path, tmp_path: Path
) -> None:
    reader = Dataset(dataset)
    expected = [bytes(reader.read_bytes(i)) for i in range(len(reader))]
    stop, rounds, wrong = threading.Event(), [0], []

    def read() -> None:
        while not stop.is_set():
            for i, data in enumerate(expected):
                if bytes(reader.read_bytes(i)) != data:
                    wrong.append(i)
            rounds[0] += 1

    thread = threading.Thread(target=read)
    thread.start()
    try:
        append(dataset, big_folder(tmp_path / "new", 30), BuildOptions(workers=1, **QUIET))
    finally:
        stop.set()
        thread.join()
    assert rounds[0] >= 2
    assert wrong == []
    assert (len(reader), reader.version) == (9, 1)  # still version 1, as opened
    assert len(Dataset(dataset)) == 39
    assert [bytes(Dataset(dataset, version=1).read_bytes(i)) for i in range(9)] == expected


def test_appends_reuse_the_dataset_s_zstd_dictionaries(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    options = BuildOptions(schema=SCHEMA, dictionary_size=2048, workers=1, **QUIET)
    build(captions_list(tmp_path / "a"), ds, options)
    dictionary = (ds / "dicts/txt.zst.zdict").read_bytes()
    append(ds, captions_list(tmp_path / "b"), BuildOptions(workers=1, **QUIET))
    manifest = read_manifest(ds / "fastpack.json")
    assert manifest.schema == read_manifest(ds / "versions/000001/fastpack.json").schema
    assert (ds / "dicts/txt.zst.zdict").read_bytes() == dictionary  # the same file, kept
    files = DatasetFiles(ds)
    index = files.index
    decompress = zstandard.ZstdDecompressor(dict_data=zstandard.ZstdCompressionDict(dictionary))
    for i in (0, 39, 40, 79):  # the build's and the append's samples
        shard, offset, size = index.locate(
            i, "txt.zst", files.shard_path(int(index.shard[i])).stat().st_size
        )
        data = files.shard_path(shard).read_bytes()[offset : offset + size]
        assert decompress.decompress(data).decode("utf-8") == caption(i % 40)
    assert len(samples(ds)) == 80
