"""One byte changed at a time in every kind of file a dataset holds, each change checked by
`verify_dataset` in this process, then undone (imported by `flip_bench` and by
tests/reader/verify/test_verify_flips.py).

`make_datasets` builds two small datasets from a JSON-lines list of real JPEGs: a tar one (image,
class names, a zstd text field with a trained dictionary, several shards, rejected inputs, a view
beside it) and the same as TFRecord shards. `plan_flips` draws, for each kind of file, changes
of one byte at random positions to random other values, and the whitespace swaps a text parser
may not see (`\\n` to `\\v`, ` ` to `\\t`); `run_flips` applies each, runs the plain verify and
records whether it reported a problem naming the file.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import simplejpeg
from fastpack.reader import verify_dataset

from fastpack.cli import main

CLASSES = ("cat", "dog", "owl", "yak")
ROWS = 160  # enough captions to train a zstd dictionary on
IMAGES = 24  # distinct JPEGs; rows repeat them
BROKEN = (17, 58, 103)  # rows whose image is not a JPEG: rejected
WORDS = ("a", "photo", "of", "the", "small", "red", "house", "near", "river", "under", "sky")
WHITESPACE = ((0x0A, 0x0B), (0x20, 0x09))  # '\n' -> '\v', ' ' -> '\t'


@dataclass(frozen=True)
class Kind:
    """A kind of file: in which dataset, which files (a glob), and whether it is text."""

    dataset: str  # "tar" or "tfrecord"
    pattern: str
    text: bool


KINDS: dict[str, Kind] = {
    "manifest": Kind("tar", "fastpack.json", text=True),
    "index": Kind("tar", "index.fpx", text=False),
    "tar shard": Kind("tar", "shards/*.tar", text=False),
    "wds2idx index": Kind("tar", "shards/*.idx", text=True),
    "rejects": Kind("tar", "rejects.jsonl", text=True),
    "zstd dictionary": Kind("tar", "dicts/*.zdict", text=False),
    "view": Kind("tar", "views/*.fpview", text=False),
    "tfrecord shard": Kind("tfrecord", "shards/*.tfrecord", text=False),
    "tfrecord2idx index": Kind("tfrecord", "shards/*.idx", text=True),
    "manifest (record dataset)": Kind("tfrecord", "fastpack.json", text=True),
}


def _jpeg(i: int) -> bytes:
    rng = np.random.default_rng(i)
    height, width = 40 + 8 * (i % 4), 56 + 16 * (i % 3)
    y, x = np.mgrid[0:height, 0:width]
    base = np.stack([x * 4, y * 5, (x + y + 17 * i) % 256], axis=-1)
    pixels = np.clip(base + rng.integers(0, 40, (height, width, 3)), 0, 255).astype(np.uint8)
    return bytes(simplejpeg.encode_jpeg(np.ascontiguousarray(pixels), 85))


def _inputs(root: Path) -> tuple[Path, Path]:
    """The list file (and its images) and the schema of the datasets' build."""
    (root / "img").mkdir(parents=True, exist_ok=True)
    for i in range(IMAGES):
        (root / "img" / f"{i:02d}.jpg").write_bytes(_jpeg(i))
    (root / "img" / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not a JPEG after all")
    rows = []
    for i in range(ROWS):
        words = " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 3 + i % 7))
        path = "img/broken.jpg" if i in BROKEN else f"img/{i % IMAGES:02d}.jpg"
        label = CLASSES[i % len(CLASSES)]
        rows.append({"path": path, "label": label, "caption": f"{i}: a {label}, {words}"})
    listing = root / "train.jsonl"
    listing.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    fields = [
        {"name": "jpg", "type": "jpeg", "column": "path"},
        {"name": "cls", "type": "class", "column": "label"},
        {"name": "txt.zst", "type": "text", "column": "caption",
         "zstd": {"level": 9, "dictionary": True}},
    ]  # fmt: skip
    schema = root / "schema.json"
    schema.write_text(json.dumps({"fields": fields}), encoding="utf-8")
    return listing, schema


def make_datasets(work: Path) -> dict[str, Path]:
    """The tar and the record dataset (built by `fastpack build`, in this process), the tar
    one with a view beside it (`fastpack view`)."""
    listing, schema = _inputs(work / "inputs")
    out = {}
    for shard_format in ("tar", "tfrecord"):
        root = work / f"ds-{shard_format}"
        args = [str(listing), str(root), "--schema", str(schema), "--shard-size", "120000"]
        args += ["--dictionary-size", "4KiB", "--shard-format", shard_format]
        code = main(["build", *args, "--workers", "1", "--no-progress"])
        if code not in (0, None):
            raise RuntimeError(f"fastpack build {' '.join(args)} exited with {code}")
        out[shard_format] = root
    code = main(["view", str(out["tar"]), "train", "--fraction", "0.5", "--classes", "cat,owl"])
    if code not in (0, None):
        raise RuntimeError(f"fastpack view exited with {code}")
    return out


def kind_files(roots: dict[str, Path], kind: Kind) -> list[Path]:
    files = sorted(roots[kind.dataset].glob(kind.pattern))
    if not files:
        raise RuntimeError(f"no {kind.pattern} in {roots[kind.dataset]}")
    return files


@dataclass(frozen=True)
class Flip:
    """Byte `position` of `file` set to `value` (from `old`); `how`: random or whitespace."""

    file: str  # relative to its dataset
    position: int
    old: int
    value: int
    how: str


def plan_flips(
    roots: dict[str, Path], kind: Kind, rng: np.random.Generator, count: int, swaps: int
) -> list[Flip]:
    """`count` random changes of one byte over the files of `kind` (positions uniform over their
    bytes, values uniform over the other 255), then for a text kind up to `swaps` of each
    whitespace swap at random positions."""
    root = roots[kind.dataset]
    files = kind_files(roots, kind)
    data = [f.read_bytes() for f in files]
    sizes = np.array([len(d) for d in data], np.int64)
    ends = np.cumsum(sizes)
    flips = []
    for at in rng.integers(0, int(ends[-1]), count).tolist():
        k = int(np.searchsorted(ends, at, side="right"))
        position = at - int(ends[k] - sizes[k])
        old = data[k][position]
        value = (old + int(rng.integers(1, 256))) % 256
        flips.append(Flip(str(files[k].relative_to(root)), position, old, value, "random"))
    if kind.text:
        for before, after in WHITESPACE:
            spots = [(k, p) for k, d in enumerate(data) for p in _positions(d, before)]
            chosen = rng.permutation(len(spots))[:swaps].tolist()
            for k, p in (spots[c] for c in chosen):
                flips.append(
                    Flip(
                        str(files[k].relative_to(root)),
                        p,
                        before,
                        after,
                        f"{before:#04x}>{after:#04x}",
                    )
                )
    return flips


def _positions(data: bytes, byte: int) -> Iterator[int]:
    at = data.find(bytes([byte]))
    while at >= 0:
        yield at
        at = data.find(bytes([byte]), at + 1)


@dataclass
class Outcome:
    """What verify made of the flips of one kind."""

    files: int
    bytes: int
    flips: dict[str, int] = field(default_factory=dict)  # by `how`
    found: dict[str, int] = field(default_factory=dict)
    named: int = 0  # found by a problem that names the changed file
    errors: int = 0  # verify raised instead of reporting
    missed: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _write(path: Path, position: int, value: int) -> None:
    with path.open("r+b") as f:
        f.seek(position)
        f.write(bytes([value]))


def run_flips(root: Path, flips: Sequence[Flip], files: int, size: int) -> Outcome:
    """Apply each flip to the dataset at `root`, run `verify_dataset` (plain), undo it."""
    outcome = Outcome(files=files, bytes=size)
    start = time.perf_counter()
    for flip in flips:
        path = root / flip.file
        _write(path, flip.position, flip.value)
        try:
            report = verify_dataset(root)
            found, named = not report.ok, any(flip.file in p for p in report.problems)
        except Exception:
            found = named = False
            outcome.errors += 1
        finally:
            _write(path, flip.position, flip.old)
        outcome.flips[flip.how] = outcome.flips.get(flip.how, 0) + 1
        outcome.found[flip.how] = outcome.found.get(flip.how, 0) + found
        outcome.named += named
        if not found:
            outcome.missed.append(asdict(flip))
    outcome.seconds = time.perf_counter() - start
    return outcome
