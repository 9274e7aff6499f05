"""A wild corpus: a million small distinct images, a fraction of them hostile, and a list file.

    python -m benchmarks.builds.wild_corpus --inputs 1000000 --out /work/wild/corpus-1000000

The source is a CSV list file (`list.csv`: `path,label` with class names), the form a crawl or
scrape gives: its inputs are whatever the crawler saved under the names it chose, and a line
may name something that is not a readable image file. The files lie under class folders
(`images/<class>/<number>.jpg`), so the tree also reads as an ImageFolder; but an ImageFolder
walk skips a directory named like an image, where a list names it and the build must reject it.

Regular inputs (`--progressive` of them progressive, the rest baseline) are spliced from
restart segments of a few thousand OpenCV tiles (`_wild_jpeg.RowPool`): 64 or 96 pixels wide,
48 to 128 tall, 1.5 to 4 KB, each a distinct image. `--hostile-fraction` of the lines (at
random places) name a hostile input instead, the kinds of `_wild_hostile.KINDS` in turn;
`hostile.jsonl` lists each one: its path, line, kind and the outcome expected of each build
configuration. `corpus.json` records the parameters, the counts and the bytes. Generation runs in
`--processes` processes (default: all cores), with no network; a corpus already made with the
same parameters is kept.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import simplejpeg

from benchmarks.builds import _wild_jpeg as wj
from benchmarks.builds._wild_hostile import BY_NAME, CONFIGS, KIND_NAMES, Kind, Sources

LIST_NAME = "list.csv"
HOSTILE_NAME = "hostile.jsonl"
INFO_NAME = "corpus.json"
IMAGES_DIR = "images"
_WIDTHS = (64, 96)
_TILES_PER_POOL = 512
_QUALITY = 80
_ROWS = (3, 8)  # MCU rows of a regular image: 48 to 128 pixels tall
_CHUNK = 20_000
_POOLS: tuple[wj.RowPool, ...] = ()  # made before the processes fork; they inherit it


@dataclass(frozen=True, kw_only=True)
class Params:
    inputs: int
    hostile_fraction: float
    classes: int
    progressive: float
    seed: int
    kinds: tuple[str, ...]


def class_name(i: int, params: Params) -> str:
    return f"c{i * params.classes // params.inputs:04d}"


def input_path(i: int, params: Params, suffix: str = ".jpg") -> str:
    width = max(7, len(str(params.inputs - 1)))
    return f"{IMAGES_DIR}/{class_name(i, params)}/{i:0{width}d}{suffix}"


def regular_image(rng: np.random.Generator, progressive: float) -> tuple[bytes, bool]:
    """A distinct regular JPEG: rows of a random pool; progressive with that probability."""
    pool = _POOLS[int(rng.integers(len(_POOLS)))]
    rows = int(rng.integers(_ROWS[0], _ROWS[1] + 1))
    data = pool.splice(rng.integers(0, len(pool.rows), rows).tolist())
    if rng.random() >= progressive:
        return data, False
    rgb = simplejpeg.decode_jpeg(data, colorspace="RGB")
    return wj.encode_jpeg(rgb, quality=85, progressive=True), True


def hostile_lines(params: Params) -> dict[int, str]:
    """Line (input number) -> hostile kind: random lines, the kinds in turn."""
    count = round(params.inputs * params.hostile_fraction)
    rng = np.random.default_rng([params.seed, 1])
    lines = sorted(rng.choice(params.inputs, size=count, replace=False).tolist())
    order = rng.permutation(count).tolist()
    return {line: params.kinds[order[j] % len(params.kinds)] for j, line in enumerate(lines)}


def _write_chunk(task: tuple[Path, Params, int, frozenset[int]]) -> tuple[int, int, int]:
    """The regular inputs of chunk `k`: (files, bytes, progressive files)."""
    root, params, k, hostile = task
    rng = np.random.default_rng([params.seed, 2, k])
    files = size = progressive = 0
    for i in range(k * _CHUNK, min((k + 1) * _CHUNK, params.inputs)):
        if i in hostile:
            continue
        data, is_progressive = regular_image(rng, params.progressive)
        (root / input_path(i, params)).write_bytes(data)
        files, size, progressive = files + 1, size + len(data), progressive + is_progressive
    return files, size, progressive


def _write_hostile(root: Path, params: Params, lines: dict[int, str]) -> list[dict[str, Any]]:
    rng = np.random.default_rng([params.seed, 3])
    sources = Sources(base=lambda r: regular_image(r, 0.0)[0])
    entries = []
    for line, name in lines.items():
        kind: Kind = BY_NAME[name]
        path = input_path(line, params, kind.suffix)
        data = kind.make(sources, rng)
        if data is None:
            (root / path).mkdir()
        else:
            (root / path).write_bytes(data)
        entries.append(
            {
                "path": path,
                "line": line,
                "kind": name,
                "bytes": None if data is None else len(data),
                "expected": {c: kind.expected(c).to_json() for c in CONFIGS},
            }
        )
    return entries


def _write_list(root: Path, params: Params, lines: dict[int, str]) -> None:
    tmp = root / (LIST_NAME + ".tmp")
    with tmp.open("w", encoding="utf-8") as file:
        file.write("path,label\n")
        for start in range(0, params.inputs, _CHUNK):
            rows = []
            for i in range(start, min(start + _CHUNK, params.inputs)):
                suffix = BY_NAME[lines[i]].suffix if i in lines else ".jpg"
                rows.append(f"{input_path(i, params, suffix)},{class_name(i, params)}\n")
            file.write("".join(rows))
    tmp.replace(root / LIST_NAME)


def _du_kib(root: Path, apparent: bool) -> int:
    command = ["du", "-sk", *(["--apparent-size"] if apparent else []), str(root)]
    return int(
        subprocess.run(command, check=True, capture_output=True, text=True).stdout.split()[0]
    )


def make_corpus(root: Path, params: Params, processes: int) -> dict[str, Any]:
    """Write the corpus under `root` (module docstring); its `corpus.json` as a dict. A corpus
    with the same parameters already there is kept."""
    info_path = root / INFO_NAME
    if info_path.exists():
        info: dict[str, Any] = json.loads(info_path.read_text())
        if info["params"] == {**asdict(params), "kinds": list(params.kinds)}:
            return info
        raise SystemExit(
            f"{root}: holds a corpus of other parameters ({info['params']}); "
            "choose another --out or remove it"
        )
    if root.exists() and any(root.iterdir()):
        raise SystemExit(f"{root}: not empty and no {INFO_NAME}; choose another --out")
    began = time.perf_counter()
    global _POOLS  # noqa: PLW0603 -- per process
    rng = np.random.default_rng([params.seed, 0])
    _POOLS = tuple(wj.RowPool.make(w, _TILES_PER_POOL, _QUALITY, rng) for w in _WIDTHS)
    for c in range(params.classes):  # every class has inputs: classes <= inputs
        (root / IMAGES_DIR / f"c{c:04d}").mkdir(parents=True, exist_ok=True)
    lines = hostile_lines(params)
    hostile = frozenset(lines)
    tasks = [(root, params, k, hostile) for k in range(-(-params.inputs // _CHUNK))]
    with multiprocessing.get_context("fork").Pool(processes) as pool:
        done = pool.map(_write_chunk, tasks, chunksize=1)
    entries = _write_hostile(root, params, lines)
    with (root / HOSTILE_NAME).open("w", encoding="utf-8") as file:
        file.writelines(json.dumps(e) + "\n" for e in entries)
    _write_list(root, params, lines)
    seconds = time.perf_counter() - began
    info = {
        "params": {**asdict(params), "kinds": list(params.kinds)},
        "list": LIST_NAME,
        "regular": sum(d[0] for d in done),
        "regular_bytes": sum(d[1] for d in done),
        "progressive": sum(d[2] for d in done),
        "hostile": len(entries),
        "hostile_by_kind": dict(sorted(Counter(e["kind"] for e in entries).items())),
        "generate_s": round(seconds, 1),
        "processes": processes,
        "disk_kib": _du_kib(root, apparent=False),
        "apparent_kib": _du_kib(root, apparent=True),
    }
    info_path.write_text(json.dumps(info, indent=1) + "\n")
    return info


def _kinds(text: str) -> tuple[str, ...]:
    names = tuple(s for s in text.split(",") if s)
    unknown = [n for n in names if n not in BY_NAME]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown kinds {unknown}; kinds are {', '.join(KIND_NAMES)}"
        )
    return names


def add_corpus_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--inputs", type=int, default=1_000_000, help="lines of the list")
    parser.add_argument("--hostile-fraction", type=float, default=0.001)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--progressive", type=float, default=0.1, help="of the regular inputs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kinds", type=_kinds, default=KIND_NAMES, help="hostile kinds, in turn")
    parser.add_argument("--processes", type=int, default=os.cpu_count() or 1)


def params_of(args: argparse.Namespace) -> Params:
    if args.inputs < 1 or not 0 <= args.hostile_fraction <= 1 or not args.kinds:
        raise SystemExit(
            "--inputs must be positive, --hostile-fraction in [0, 1], --kinds not empty"
        )
    return Params(
        inputs=args.inputs,
        hostile_fraction=args.hostile_fraction,
        classes=min(args.classes, args.inputs),
        progressive=args.progressive,
        seed=args.seed,
        kinds=tuple(args.kinds),
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_corpus_options(parser)
    parser.add_argument("--out", type=Path, required=True, help="the corpus directory")
    args = parser.parse_args(argv)
    info = make_corpus(args.out, params_of(args), args.processes)
    print(json.dumps(info, indent=1))


if __name__ == "__main__":
    main()
