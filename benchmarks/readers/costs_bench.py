"""Per-operation costs behind the reader's design choices, each timed in one process on one core.

    python -m benchmarks.readers.costs_bench --corpus /tmp/photo-corpus \
        --out benchmarks/readers/COSTS.md \
        --json benchmarks/readers/costs_results.json

Each figure is the median (and range) over `--repeats` timed rounds; a round times a loop of
several calls and reports the time per call. The design notes in the code point here instead of
quoting numbers that drift.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import simplejpeg
from fastpack.compiler.images.jpeg_structure import read_jpeg_structure
from fastpack.formats import IndexPart, IndexWriter
from fastpack.formats.index import Index
from fastpack.reader.image.draws import sample_draws
from fastpack.reader.order.permutation import KeyedPermutation

from benchmarks import sysinfo as _sysinfo

Row = tuple[str, list[float], str]


def per_call(fn: Callable[[], object], calls: int, repeats: int) -> list[float]:
    """Seconds per call of `fn`, one figure per round of `calls` calls."""
    rounds = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        rounds.append((time.perf_counter() - start) / calls)
    return rounds


def photos(corpus: Path, count: int) -> list[bytes]:
    paths = sorted(corpus.rglob("*.jpg"))[:count]
    if not paths:
        raise SystemExit(f"{corpus}: no .jpg files")
    return [p.read_bytes() for p in paths]


def decode_rows(data: list[bytes], repeats: int) -> list[Row]:
    rows: list[Row] = []
    sizes = [simplejpeg.decode_jpeg_header(d)[:2] for d in data]
    for label, shift in (("full size", 0), ("1/2 scale", 1), ("1/8 scale", 3)):

        def decode_all(shift: int = shift) -> None:
            for d, (h, w) in zip(data, sizes, strict=True):
                # the smallest size at least (h, w) / 2**shift: libjpeg's 1/2**shift decode
                min_h, min_w = (-(-h >> shift), -(-w >> shift)) if shift else (0, 0)
                simplejpeg.decode_jpeg(d, colorspace="RGB", min_height=min_h, min_width=min_w)

        times = [t / len(data) for t in per_call(decode_all, 1, repeats)]
        rows.append((f"decode one photo, {label}", times, "ms"))
    halves = [
        simplejpeg.decode_jpeg(d, colorspace="RGB", min_height=-(-h >> 1), min_width=-(-w >> 1))
        for d, (h, w) in zip(data, sizes, strict=True)
    ]

    def crop_resize() -> None:
        for image in halves:
            h, w = image.shape[:2]
            box = image[h // 8 : h - h // 8, w // 8 : w - w // 8]
            cv2.resize(box, (224, 224), interpolation=cv2.INTER_LINEAR)

    crop = [t / len(halves) for t in per_call(crop_resize, 1, repeats)]
    rows.append(("crop + bilinear resize to 224x224 after a 1/2-scale decode", crop, "ms"))
    return rows


def draw_rows(repeats: int) -> list[Row]:
    batch = list(range(64))

    def per_sample_rng() -> None:
        for i in batch:
            np.random.default_rng((0, 1, i)).random(23)

    rng = [t / 64 for t in per_call(per_sample_rng, 20, repeats)]
    hashed = [t / 64 for t in per_call(lambda: sample_draws(0, 1, batch, 23), 200, repeats)]
    single = per_call(lambda: sample_draws(0, 1, [7], 23), 2000, repeats)
    return [
        ("23 draws per sample, a seeded numpy Generator per sample", rng, "us"),
        ("23 draws per sample, `sample_draws` over a batch of 64", hashed, "us"),
        ("23 draws for one sample alone, `sample_draws`", single, "us"),
    ]


def permutation_rows(repeats: int) -> list[Row]:
    n = 10_000_000
    keyed = KeyedPermutation(n, seed=0, epoch=1)
    positions = np.arange(8192, dtype=np.int64)
    feistel = per_call(lambda: keyed(positions), 20, repeats)
    numpy_perm = per_call(lambda: np.random.default_rng((0, 1)).permutation(n), 1, repeats)
    return [
        ("keyed permutation of 10M, 8,192 positions evaluated", feistel, "ms"),
        ("numpy `permutation(10M)` materialised", numpy_perm, "ms"),
    ]


def index_release_rows(repeats: int) -> list[Row]:
    n = 4_000_000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "index.fpx"
        fields = ("jpg", "cls")
        zeros8 = np.zeros(n, "<u8")
        part = IndexPart(
            shard=0,
            labels=np.zeros(n, "<i8"),
            key_blob=np.zeros(0, np.uint8),
            key_offsets=np.zeros(n + 1, "<u8"),
            source_blob=np.zeros(0, np.uint8),
            source_offsets=np.zeros(n + 1, "<u8"),
            offsets=dict.fromkeys(fields, zeros8),
            sizes=dict.fromkeys(fields, zeros8),
            crc32={f: np.zeros(n, "<u4") for f in fields},
        )
        with IndexWriter(
            path=path,
            num_samples=n,
            num_shards=1,
            fields=fields,
            key_blob_size=0,
            source_blob_size=0,
        ) as writer:
            writer.append(part)
        index = Index(path)
        gigabytes = path.stat().st_size / 1e9
        sections = [index.label, index.offsets("jpg"), index.sizes("jpg"), index.crc32("jpg")]
        times = []
        for _ in range(repeats):
            for s in sections:
                int(np.asarray(s[::512]).sum())  # fault every page in
            start = time.perf_counter()
            index.release()
            times.append((time.perf_counter() - start) / gigabytes)
    return [
        (f"`Index.release` after touching every page, per GB ({gigabytes:.2f} GB)", times, "ms")
    ]


def structure_rows(data: list[bytes], repeats: int) -> list[Row]:
    """The build's default check of a kept JPEG: its marker structure, no decode."""

    def check_all() -> None:
        for d in data:
            read_jpeg_structure(d)

    rounds = [t / len(data) for t in per_call(check_all, 5, repeats)]
    return [("JPEG marker structure check (`read_jpeg_structure`), per photo", rounds, "us")]


def context_manager_rows(repeats: int) -> list[Row]:
    @contextmanager
    def guard() -> Any:
        yield

    def guarded() -> None:
        with guard():
            pass

    def bare() -> None:
        try:
            pass
        except ValueError:
            raise

    return [
        ("a `@contextmanager` around one sample's decode", per_call(guarded, 20000, repeats), "us"),
        ("an inline try/except instead", per_call(bare, 20000, repeats), "us"),
    ]


def table(rows: list[Row]) -> str:
    scale = {"ms": 1e3, "us": 1e6}
    lines = ["| operation | median | range | unit |", "|---|---:|---:|---|"]
    for name, times, unit in rows:
        k = scale[unit]
        med = statistics.median(times) * k
        lines.append(f"| {name} | {med:.3g} | {min(times) * k:.3g}-{max(times) * k:.3g} | {unit} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="ImageFolder of photos")
    parser.add_argument("--photos", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--json", type=Path, help="the raw numbers")
    args = parser.parse_args()
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load_before = _sysinfo.load()
    data = photos(args.corpus, args.photos)
    rows = decode_rows(data, args.repeats)
    rows += structure_rows(data, args.repeats)
    rows += draw_rows(args.repeats)
    rows += permutation_rows(args.repeats)
    rows += index_release_rows(args.repeats)
    rows += context_manager_rows(args.repeats)
    load_after = _sysinfo.load()
    machine, versions = _sysinfo.machine(), _sysinfo.versions()
    commit = _sysinfo.fastpack_commit(Path(__file__).resolve().parent.parent)
    if args.json:
        raw = {
            "date": date,
            "commit": commit,
            "machine": machine,
            "versions": versions,
            "load_before": load_before,
            "load_after": load_after,
            "repeats": args.repeats,
            "corpus": _sysinfo.corpus(args.corpus),
            "photos": len(data),
            "rows": [{"operation": n, "seconds": t, "unit": u} for n, t, u in rows],
        }
        args.json.write_text(json.dumps(raw, indent=1) + "\n")
    report = "\n".join(
        [
            "# Per-operation costs",
            "",
            "`python -m benchmarks.readers.costs_bench --corpus CORPUS --out "
            "benchmarks/readers/COSTS.md --json "
            "benchmarks/readers/costs_results.json`: each "
            f"figure the median and range over {args.repeats} rounds, one process, one core; "
            f"decode figures over {len(data)} photos of the corpus.",
            "",
            f"Date: {date}; raw numbers: `{args.json.name if args.json else '(not kept)'}`",
            f"Machine: `{json.dumps(machine)}`; "
            f"load before / after `{load_before}` / `{load_after}`",
            f"Versions: `{json.dumps(versions)}`; fastpack `{commit}`",
            f"Corpus: `{json.dumps(_sysinfo.corpus(args.corpus))}`",
            "",
            table(rows),
            "",
        ]
    )
    print(report)
    if args.out:
        args.out.write_text(report, encoding="utf-8")


if __name__ == "__main__":
    main()
