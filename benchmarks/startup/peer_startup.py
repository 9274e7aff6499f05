"""Start-up of five peers at about 1 million samples, for `startup_bench --parts peers`.

Needs the peers' environment (webdataset). The datasets repeat the corpus, as fastpack's
synthetic datasets do:

- webdataset: the corpus written once by the `wds-simplejpeg` peer (`webdataset.ShardWriter`,
  256 samples per tar), then a folder of symbolic links that lists those tars again and again up
  to the sample count. Its loader opens one tar per worker to start, whatever the count.
- DALI CPU: the `dali-cpu` peer's tars and their `wds2idx` indexes, linked again and again in
  the same way. `fn.readers.webdataset` reads every index when the pipeline is built.
- LitData and Mosaic Streaming: the corpus written once by their peers (`litdata.optimize`,
  `MDSWriter`), then a folder of links to those chunks (shards) again and again, with an
  `index.json` that lists every link with the original's sample count and bytes, as the writer
  would have for a dataset that large.
- ImageFolder: a tree of 1,000 class folders of hard links to the corpus's JPEGs (regular
  files, as in a real ImageFolder), up to the sample count. The `imagefolder-pil` peer lists the
  whole tree when its dataset is made, as torchvision's `ImageFolder` does
  (`imagefolder_peer.list_like_torchvision`: a list of `(path string, class)`), which is the
  part of its start-up that grows with the count. The listing is also timed alone, and, for
  comparison, as `pathlib` `rglob` into `Sample`s (what the peer did before).

Each measurement runs in a fresh process
(`python -m benchmarks.startup.peer_startup ACTION --dir D`)
and prints `RESULT <json>`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.procmem import status_kib

CLASSES = 1000
DONE = "complete"  # marker file written once a tree is whole


def _tars(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.tar"))


def _linked_tree(
    base: Path, out: Path, source: Path, samples: int, suffixes: tuple[str, ...]
) -> tuple[Path, int]:
    """`(out, samples it holds)`: the tars of `base` (and their files with the other
    `suffixes`) linked again and again into `out`, up to at least `samples` samples."""
    tars = _tars(base)
    per_copy = sum(1 for _ in source.rglob("*.jpg"))
    copies = -(-samples // per_copy)
    if not (out / DONE).exists():
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        for k in range(copies * len(tars)):
            tar = tars[k % len(tars)].resolve()
            for suffix in suffixes:
                (out / f"{k:06d}{suffix}").symlink_to(tar.with_suffix(suffix))
        (out / DONE).write_text("")
    return out, copies * per_copy


def _converted(base: Path, convert: Callable[[Path], object]) -> Path:
    """`base`, written once by `convert(base)` and kept across runs once complete."""
    if not (base / DONE).exists():
        shutil.rmtree(base, ignore_errors=True)
        base.mkdir(parents=True)
        convert(base)
        (base / DONE).write_text("")
    return base


def webdataset_tree(source: Path, workdir: Path, samples: int) -> tuple[Path, int]:
    """`(folder of tar links, samples it holds)`: the corpus's tars repeated to >= `samples`."""
    from benchmarks.readers.peers import _wds  # noqa: PLC0415 -- on use: each peer's library, in its own measurement

    base = _converted(workdir / "webdataset-base", lambda out: _wds.write_shards(source, out))
    return _linked_tree(base, workdir / f"webdataset-{samples}", source, samples, (".tar",))


def dali_tree(source: Path, workdir: Path, samples: int) -> tuple[Path, int]:
    """`(folder of tar and index links, samples it holds)`, as `webdataset_tree` for DALI."""
    from benchmarks.readers.peers import dali_peer  # noqa: PLC0415 -- on use: each peer's library, in its own measurement

    base = _converted(workdir / "dali-base", lambda out: dali_peer.convert(source, out, 1))
    return _linked_tree(base, workdir / f"dali-{samples}", source, samples, (".tar", ".idx"))


def _indexed_tree(
    base: Path, out: Path, samples: int, entries_key: str, relink: Callable[[Any, int], Path]
) -> tuple[Path, int]:
    """`(out, samples it holds)`: the files listed under `entries_key` in `base/index.json`
    linked again and again into `out` with a matching `index.json`, up to >= `samples`.
    `relink(entry, k)` renames entry `k` of the new index and returns its file name's source."""
    index = json.loads((base / "index.json").read_text())
    entries = index[entries_key]
    per_copy = sum(_entry_samples(e) for e in entries)
    copies = -(-samples // per_copy)
    if not (out / DONE).exists():
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        listed = []
        for k in range(copies * len(entries)):
            entry = json.loads(json.dumps(entries[k % len(entries)]))
            original = relink(entry, k)
            name = _entry_file(entry)
            (out / name).symlink_to((base / original).resolve())
            listed.append(entry)
        (out / "index.json").write_text(json.dumps({**index, entries_key: listed}))
        (out / DONE).write_text("")
    return out, copies * per_copy


def _entry_samples(entry: dict[str, Any]) -> int:
    return int(entry["chunk_size"] if "chunk_size" in entry else entry["samples"])


def _entry_file(entry: dict[str, Any]) -> str:
    return str(entry["filename"] if "filename" in entry else entry["raw_data"]["basename"])


def _relink_chunk(entry: dict[str, Any], k: int) -> Path:
    original = Path(entry["filename"])
    entry["filename"] = f"chunk-0-{k}.bin"
    return original


def _relink_shard(entry: dict[str, Any], k: int) -> Path:
    original = Path(entry["raw_data"]["basename"])
    entry["raw_data"]["basename"] = f"shard.{k:05d}.mds"
    return original


def litdata_tree(source: Path, workdir: Path, samples: int) -> tuple[Path, int]:
    """`(dataset folder, samples)`: LitData chunks of the corpus listed again and again."""
    from benchmarks.readers.peers import litdata_peer  # noqa: PLC0415 -- on use: each peer's library, in its own measurement

    base = _converted(workdir / "litdata-base", lambda out: litdata_peer.convert(source, out, 1))
    out = workdir / f"litdata-{samples}"
    _, held = _indexed_tree(base / "chunks", out / "chunks", samples, "chunks", _relink_chunk)
    return out, held


def mosaic_tree(source: Path, workdir: Path, samples: int) -> tuple[Path, int]:
    """`(dataset folder, samples)`: Mosaic MDS shards of the corpus listed again and again."""
    from benchmarks.readers.peers import mosaic_peer  # noqa: PLC0415 -- on use: each peer's library, in its own measurement

    base = _converted(workdir / "mosaic-base", lambda out: mosaic_peer.convert(source, out, 1))
    out = workdir / f"mosaic-{samples}"
    _, held = _indexed_tree(base / "mds", out / "mds", samples, "shards", _relink_shard)
    return out, held


def imagefolder_tree(source: Path, workdir: Path, samples: int) -> Path:
    """`workdir/imagefolder-hl-N/train/class_KKKK/NNNNNNN.jpg`: `samples` hard links to the
    corpus's JPEGs in `CLASSES` folders, and the `corpus.txt` the `imagefolder-pil` peer reads.
    Hard links, not symbolic ones: each is a regular file, as in a real ImageFolder, so a
    listing learns from the directory entry that it is not a folder (`os.walk` and
    `os.scandir` need no `stat`); a symbolic link would cost a `stat` of its target per file.
    `workdir` must be on the corpus's file system."""
    out = workdir / f"imagefolder-hl-{samples}"
    root = out / "train"
    if not (out / DONE).exists():
        shutil.rmtree(out, ignore_errors=True)
        jpegs = sorted(str(p.resolve()) for p in source.rglob("*.jpg"))
        for c in range(CLASSES):
            (root / f"class_{c:04d}").mkdir(parents=True)
        for i in range(samples):
            link = root / f"class_{i % CLASSES:04d}" / f"{i:07d}.jpg"
            os.link(jpegs[i % len(jpegs)], link)
        (out / "corpus.txt").write_text(str(root))
        (out / DONE).write_text("")
    return out


def warm_listing(root: Path) -> None:
    """Walk the tree once, so that timed listings find the directory entries cached."""
    for _ in os.walk(root):
        pass


# -- fresh-process measurements -------------------------------------------------------------


def _first_batch(peer_name: str, directory: Path) -> dict[str, Any]:
    from benchmarks.readers.peers import load_peer  # noqa: PLC0415 -- on use: each peer's library, in its own measurement

    peer = load_peer(peer_name)  # library imports happen here, before the clock
    start = time.perf_counter()
    epochs = peer.loader(directory, 64, 2, 0)
    batch = next(iter(epochs.epoch(0)))
    seconds = time.perf_counter() - start
    if tuple(batch[0].shape) != (64, 224, 224, 3):
        raise ValueError(f"{peer_name}: first batch has shape {tuple(batch[0].shape)}")
    return {"seconds": seconds}


def _rss_kib() -> int:
    return status_kib("self").get("VmRSS", 0)


def _listing(kind: str, directory: Path) -> dict[str, Any]:
    from benchmarks.readers.peers._base import list_imagefolder  # noqa: PLC0415 -- on use: each peer's library, in its own measurement
    from benchmarks.readers.peers.imagefolder_peer import list_like_torchvision  # noqa: PLC0415 -- on use: each peer's library, in its own measurement

    root = Path((directory / "corpus.txt").read_text())
    lister: Callable[[], list[Any]] = (
        (lambda: list_imagefolder(root))
        if kind == "pathlib"
        else (lambda: list_like_torchvision(root))
    )
    before = _rss_kib()
    start = time.perf_counter()
    found = lister()
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "files": len(found), "rss_growth_kib": _rss_kib() - before}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "action",
        choices=[
            "wds",
            "dali",
            "litdata",
            "mosaic",
            "imagefolder",
            "list-torchvision",
            "list-pathlib",
        ],
    )
    parser.add_argument("--dir", type=Path, required=True)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if args.action == "wds":
        result = _first_batch("wds-simplejpeg", args.dir)
    elif args.action == "dali":
        result = _first_batch("dali-cpu", args.dir)
    elif args.action in ("litdata", "mosaic"):
        result = _first_batch(args.action, args.dir)
    elif args.action == "imagefolder":
        result = _first_batch("imagefolder-pil", args.dir)
    else:
        result = _listing(args.action.removeprefix("list-"), args.dir)
    print("RESULT " + json.dumps(result), flush=True)


# -- the driver's side ----------------------------------------------------------------------

Step = Callable[[Any, str, list[str], str], Any]


def measure(args: Any, step: Step) -> dict[str, Any]:
    """Every peer measurement `args.runs` times, interleaved; rows for the page. `step(args,
    module, arguments, name)` runs one in a fresh process."""
    source, workdir, samples = args.source, args.workdir / "peers", args.peer_samples
    wds_dir, wds_samples = webdataset_tree(source, workdir, samples)
    dali_dir, dali_samples = dali_tree(source, workdir, samples)
    lit_dir, lit_samples = litdata_tree(source, workdir, samples)
    mds_dir, mds_samples = mosaic_tree(source, workdir, samples)
    folder = imagefolder_tree(source, workdir, samples)
    lit_chunks = len(json.loads((lit_dir / "chunks" / "index.json").read_text())["chunks"])
    mds_shards = len(json.loads((mds_dir / "mds" / "index.json").read_text())["shards"])
    plan = (
        (
            "wds",
            wds_dir,
            f"webdataset (`wds-simplejpeg` peer), {len(_tars(wds_dir)):,} tars of "
            f"{wds_samples:,} samples: first batch",
        ),
        (
            "dali",
            dali_dir,
            f"DALI CPU (`dali-cpu` peer), {len(_tars(dali_dir)):,} tars and "
            f"indexes of {dali_samples:,} samples: first batch",
        ),
        (
            "litdata",
            lit_dir,
            f"LitData (`litdata` peer), {lit_chunks:,} chunks of "
            f"{lit_samples:,} samples: first batch",
        ),
        (
            "mosaic",
            mds_dir,
            f"Mosaic Streaming (`mosaic` peer), {mds_shards:,} shards of "
            f"{mds_samples:,} samples: first batch",
        ),
        (
            "imagefolder",
            folder,
            f"ImageFolder (`imagefolder-pil` peer), {samples:,} files: "
            "first batch (listing included)",
        ),
        (
            "list-torchvision",
            folder,
            f"of which listing {samples:,} files as the peer and "
            "torchvision's `ImageFolder` do (`os.scandir` of the classes, `os.walk` per class, "
            "sorted, `(path, class)` tuples)",
        ),
        (
            "list-pathlib",
            folder,
            f"listing {samples:,} files with `pathlib` `rglob`, sorted, "
            "one `Sample(path, label)` each (the peer's listing before)",
        ),
    )
    rows: dict[str, dict[str, Any]] = {a: {"what": what, "seconds": []} for a, _, what in plan}
    for r in range(args.runs):
        for action, directory, _ in plan:
            if action.startswith(("list", "imagefolder")):
                warm_listing(directory)
            result = step(
                args, "_startup_peers", [action, "--dir", str(directory)], f"p-{action}-{r}"
            )
            rows[action]["seconds"].append(result["seconds"])
            if "rss_growth_kib" in result:
                rows[action].setdefault("rss_growth_kib", []).append(result["rss_growth_kib"])
            print(f"{action}: {result['seconds']:.3f} s", flush=True)
    return {"samples": samples, "rows": list(rows.values())}


if __name__ == "__main__":
    main()
