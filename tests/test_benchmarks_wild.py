"""benchmarks/builds/wild_*: the wild corpus's inputs are what they claim to be, and the runner
builds a tiny corpus, checks each outcome (and reports a miss), and finds a build killed part way
and resumed identical to an uninterrupted one."""

from __future__ import annotations

import argparse
import json
import struct
from pathlib import Path

import cv2
import numpy as np
import pytest
import simplejpeg

from benchmarks.builds import _wild_check as check
from benchmarks.builds import _wild_jpeg as wj
from benchmarks.builds import wild_corpus
from benchmarks.builds._wild_hostile import BY_NAME, KIND_NAMES, Sources
from benchmarks.builds._wild_run import Builds
from benchmarks.builds.wild_build import Session

# kinds whose outcome the image policy decided before the C extensions were guarded
_STABLE_KINDS = (
    "truncated",
    "cmyk",
    "png16",
    "exif-rotated",
    "png-as-jpg",
    "html-as-jpg",
    "zero-byte",
    "directory",
)


@pytest.fixture(scope="module")
def sources() -> Sources:
    rng = np.random.default_rng(7)
    wild_corpus._POOLS = tuple(wj.RowPool.make(w, 16, 80, rng) for w in (64, 96))
    return Sources(base=lambda r: wild_corpus.regular_image(r, 0.0)[0])


def _app_com_bytes(data: bytes) -> int:
    """Bytes of the APPn and COM segments before the first scan."""
    found = wj.segments(data)
    return sum(end - at for at, marker, end in found if 0xE0 <= marker <= 0xEF or marker == 0xFE)


def test_progressive_writer_gives_the_pixels() -> None:
    rgb = wj.texture(40, 56, np.random.default_rng(1))
    quant = np.full(64, 2, dtype=np.int64)
    data = wj.progressive_jpeg(wj.quantized_blocks(rgb, quant), (40, 56), quant, wj.default_scans())
    assert simplejpeg.decode_jpeg_header(data)[:3] == (40, 56, "YCbCr")
    assert data.count(b"\xff\xc2") == 1
    decoded = simplejpeg.decode_jpeg(data, fastdct=False, fastupsample=False)
    assert np.abs(decoded.astype(int) - rgb).mean() < 3


def test_spliced_images_decode_and_differ(sources: Sources) -> None:
    rng = np.random.default_rng(2)
    images = [wild_corpus.regular_image(rng, 0.5) for _ in range(200)]
    assert len({data for data, _ in images}) == len(images)
    assert 20 < sum(progressive for _, progressive in images) < 180
    for data, _ in images:
        height, width, _, _ = simplejpeg.decode_jpeg_header(data)
        assert 48 <= height <= 128
        assert width in (64, 96)
        simplejpeg.decode_jpeg(data)  # strict: a warning raises


def _made(name: str, sources: Sources) -> bytes | None:
    return BY_NAME[name].make(sources, np.random.default_rng(3))


def test_the_crafted_jpegs(sources: Sources) -> None:
    abort = _made("abort-markers-coef", sources)
    assert abort is not None
    assert _app_com_bytes(abort) > 4096
    simplejpeg.decode_jpeg(abort)  # the decoder takes the 11-bit coefficient
    coefficient = _made("coef-out-of-range", sources)
    assert coefficient is not None
    assert _app_com_bytes(coefficient) < 4096
    huge = _made("huge-frame", sources)
    assert huge is not None
    assert len(huge) < 2048
    assert simplejpeg.decode_jpeg_header(huge)[:2] == (32768, 32768)
    with pytest.raises(KeyError):
        simplejpeg.decode_jpeg_header(_made("sampling-1x4", sources) or b"")
    many = _made("many-scans", sources)
    assert many is not None
    assert many.count(b"\xff\xda") > 2500
    assert len(many) < 64_000
    simplejpeg.decode_jpeg(many)
    broken = _made("progression-broken", sources)
    with pytest.raises(ValueError, match="progression"):
        simplejpeg.decode_jpeg(broken or b"")


def test_the_incomplete_progressive_files(sources: Sources) -> None:
    for name in ("scan-dropped", "eoi-between-scans"):
        data = _made(name, sources)
        assert data is not None
        assert data.endswith(wj.EOI)
        scans = [wj.scan_header(data, start) for start, _ in wj.scans(data)]
        # the script of libjpeg's progressive JPEGs has 10 scans for YCbCr; one is missing
        assert len(scans) <= 9
        simplejpeg.decode_jpeg(data)  # no warning: libjpeg cannot tell


def test_the_other_inputs(sources: Sources) -> None:
    assert simplejpeg.decode_jpeg_header(_made("cmyk", sources) or b"")[2] == "CMYK"
    png = cv2.imdecode(np.frombuffer(_made("png16", sources) or b"", np.uint8), -1)
    assert png is not None
    assert png.dtype == np.uint16
    rotated = _made("exif-rotated", sources) or b""
    assert b"Exif\0\0II*\0" in rotated[:40]
    assert struct.pack("<HHIH", 0x0112, 3, 1, 6) in rotated[:60]
    assert (_made("png-as-jpg", sources) or b"").startswith(b"\x89PNG")
    truncated = _made("truncated", sources) or b""
    assert truncated.startswith(b"\xff\xd8")
    assert b"\xff\xd9" not in truncated[-2:]
    assert _made("zero-byte", sources) == b""
    assert _made("directory", sources) is None


def _params(inputs: int, kinds: tuple[str, ...], fraction: float) -> wild_corpus.Params:
    return wild_corpus.Params(
        inputs=inputs, hostile_fraction=fraction, classes=4, progressive=0.2, seed=1, kinds=kinds
    )


def test_corpus_lists_every_input_and_each_hostile_one(tmp_path: Path) -> None:
    params = _params(400, KIND_NAMES, 0.1)
    info = wild_corpus.make_corpus(tmp_path / "c", params, processes=2)
    assert info["hostile"] == 40
    assert info["regular"] == 360
    assert set(info["hostile_by_kind"]) == set(KIND_NAMES)
    inputs = check.list_inputs(tmp_path / "c", wild_corpus.LIST_NAME)
    assert len(inputs) == 400
    assert len(set(inputs)) == 400
    hostile = check.load_hostile(tmp_path / "c")
    assert {e["path"] for e in hostile} <= set(inputs)
    for entry in hostile:
        path = tmp_path / "c" / entry["path"]
        assert path.is_dir() if entry["kind"] == "directory" else path.is_file()
        assert set(entry["expected"]) == {"baseline", "default"}
    assert wild_corpus.make_corpus(tmp_path / "c", params, processes=1) == info  # kept
    with pytest.raises(SystemExit, match="other parameters"):
        wild_corpus.make_corpus(tmp_path / "c", _params(401, KIND_NAMES, 0.1), processes=1)


def _session(tmp_path: Path) -> Session:
    params = _params(300, _STABLE_KINDS, 0.1)
    corpus = tmp_path / "corpus"
    wild_corpus.make_corpus(corpus, params, processes=1)
    # small shards, killed at a fifth of them: the shards of so small a build are written in a
    # burst, and the runner's poll must see the target before the burst ends
    args = argparse.Namespace(work=tmp_path, kill_at=0.2, keep=True, rss_budget_mib=2048.0)
    builds = Builds(workers=2, shard_size="32KiB", timeout=300.0, interval=0.05)
    return Session(args, builds, corpus, check.list_inputs(corpus, wild_corpus.LIST_NAME))


def test_runner_builds_checks_kills_and_resumes(tmp_path: Path) -> None:
    session = _session(tmp_path)
    result = session.config("default")
    assert result["finished_without_a_person"], result["uninterrupted"]["stderr_tail"]
    assert result["check"]["all_met"], result["check"]
    assert result["check"]["regular"]["samples"] == 270
    assert result["budget"]["within"]
    assert result["budget"]["worker_peak_rss_mib"]
    kill, full, killed = (
        result["kill"],
        tmp_path / "default-w2/uninterrupted",
        tmp_path / "default-w2/killed",
    )
    assert kill["killed_run"]["killed"]
    assert not kill["manifest_at_kill"]
    assert 0 < kill["shards_at_kill"] < len(list((full / "shards").glob("*.tar")))
    assert kill["resumes"][-1]["exit"] == "ok"
    assert kill["compare"]["identical"]
    assert kill["compare"]["files"] > 10

    # a changed byte in the resumed output is found; a wrong expectation is a miss
    shard = next((killed / "shards").glob("*.tar"))
    data = bytearray(shard.read_bytes())
    data[-1] ^= 1
    shard.write_bytes(bytes(data))
    compare = check.compare_trees(full, killed)
    assert not compare["identical"]
    assert compare["differ"] == [str(shard.relative_to(killed))]
    hostile_file = session.corpus / "hostile.jsonl"
    entries = check.load_hostile(session.corpus)
    cmyk = next(e for e in entries if e["kind"] == "cmyk")
    cmyk["expected"]["default"] = {"outcome": "sample", "stored": "as-is"}
    hostile_file.write_text("".join(json.dumps(e) + "\n" for e in entries))
    found = check.check_outcomes(session.corpus, full, "default", session.inputs)
    assert not found["all_met"]
    assert found["hostile"]["cmyk"]["misses"][0] == {
        "path": cmyk["path"],
        "why": "stored bytes differ from the input's",
    }
