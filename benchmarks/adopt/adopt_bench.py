"""`fastpack index` against a plain sequential read of the same shards, and reading an indexed
dataset against a built one of the same samples.

    python -m benchmarks.adopt.adopt_bench --samples 6000 --shards 16 --side 256 --rounds 3 \\
        --out benchmarks/adopt/adopt_results.json --page /tmp/ADOPT.md

Writes `--samples` distinct JPEGs (`--side` pixels square, seeded noise under a gradient, about
the bytes of a photo of that size) with a label and a caption into `--shards` tars with
`webdataset.ShardWriter`. Then, `--rounds` times, on each storage:

- `local`: the tars on local disk, the page cache dropped (`echo 3 > /proc/sys/vm/drop_caches`,
  as root; the JSON says whether it worked) before each run;
- `sshfs`: the tars exported by the tests' SSH server (`tests.network_fs`) and mounted fresh
  with sshfs before each run (a cold client cache), through a proxy adding `--sshfs-delay-ms`;
- `s3`: the tars in the tests' SeaweedFS server (`tests.s3_server`), read through the shaping
  proxy (`tests.shaping_proxy`, in a process of its own) with `--s3-delay-ms` to first byte and
  `--s3-rate-mbs` per connection;

a plain read of every shard, front to back, 4 MiB at a time as an index job reads it (two ranges
in flight on sshfs and S3, the kernel's read-ahead on a local disk), by a pool of `--workers`
processes started before the clock (one shard a task, nothing done with the bytes: `cat`-like),
then
`index_shards` of the same shards with `workers=--workers` (default options: the schema
inferred from the first shard, which is read once more for that, as a build's source does;
its own pool started on the clock, as a user waits for it). Rates are shard bytes per second;
`ratio` is the index's over the read's, in the same round.

Last, the tars are built into a dataset (`fastpack.compiler.build`, pass-through) and indexed
in place, and each is read for `--rounds` epochs, alternating, by the map-style loader
(`make_loader(Dataset(..., transform=RandomResizedCrop(--crop)), batch_size=64,
num_workers=--workers)`): images/s and the indexed one's over the built one's per round.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from benchmarks import sysinfo

REPO = Path(__file__).resolve().parents[2]
READ_BYTES = 4 << 20
DISTRIBUTIONS = ("fastpack", "numpy", "simplejpeg", "webdataset", "s3fs", "google-crc32c", "torch")
STORAGES = ("local", "sshfs", "s3")


def make_tars(folder: Path, samples: int, shards: int, side: int) -> int:
    """The corpus (see the module's docstring); returns its bytes."""
    import numpy as np  # noqa: PLC0415 -- on use
    import simplejpeg  # noqa: PLC0415 -- on use
    import webdataset  # noqa: PLC0415 -- on use

    folder.mkdir(parents=True, exist_ok=True)
    per_shard = -(-samples // shards)
    ramp = np.linspace(0, 180, side, dtype=np.float32)
    with webdataset.ShardWriter(str(folder / "train-%06d.tar"), maxcount=per_shard, verbose=0) as w:
        for i in range(samples):
            rng = np.random.default_rng(i)
            noise = rng.normal(0, 25, (side, side, 3)).astype(np.float32)
            image = np.clip(ramp[None, :, None] + ramp[:, None, None] * 0.3 + noise, 0, 255)
            jpeg = simplejpeg.encode_jpeg(image.astype(np.uint8), quality=90)
            w.write(
                {
                    "__key__": f"s{i:07d}",
                    "jpg": jpeg,
                    "cls": b"%d" % (i % 100),
                    "txt": f"sample {i}".encode(),
                }
            )
    return sum(p.stat().st_size for p in folder.glob("*.tar"))


def drop_caches() -> bool:
    """Drop the page cache (root only); whether it worked."""
    os.sync()
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError:
        return False
    return True


def _read_shard(url: str, storage_options: dict[str, Any]) -> int:
    """Every byte of the shard `url`, read as an index job reads it (the same ranges in flight,
    a local file through the kernel's read-ahead), nothing done with them."""
    from fastpack.compiler.adopt.stream import open_ranges  # noqa: PLC0415 -- on use

    total = 0
    buffer = bytearray(READ_BYTES)
    with open_ranges(url, storage_options) as raw:
        while size := raw.readinto(buffer):
            total += size
    return total


def _started(seconds: float) -> int:
    """A reader process started, with what it reads with imported."""
    import fastpack.compiler.adopt.stream  # noqa: F401, PLC0415 -- side effect: loaded before the clock starts

    time.sleep(seconds)
    return os.getpid()


def plain_read(
    shards: Sequence[str],
    workers: int,
    storage_options: dict[str, Any],
    prepare: Callable[[], Any],
) -> float:
    """Seconds to read every shard once, a pool of `workers` processes, one shard a task: the
    storage's rate. The pool's processes are started (and `prepare()` run: the cache dropped)
    before the clock starts: a spawned process takes longer to start than a cold local disk
    takes to deliver a shard."""
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn")) as pool:
        pids = set(pool.map(_started, [0.5] * workers))
        if len(pids) != workers:
            raise RuntimeError(f"{len(pids)} of {workers} reader processes started")
        prepare()
        started = time.perf_counter()
        list(pool.map(_read_shard, shards, [storage_options] * len(shards)))
        return time.perf_counter() - started


def index_run(sources: Sequence[str], out: Path, workers: int, options: dict[str, Any]) -> float:
    from fastpack.compiler import IndexOptions, index_shards  # noqa: PLC0415 -- on use

    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    index_shards(sources, out, IndexOptions(workers=workers, storage_options=options))
    return time.perf_counter() - started


@dataclass(frozen=True)
class Storage:
    """Where the shards are: what makes a run cold (`prepare`), the shards a plain read reads,
    the sources the index is given, and the storage options."""

    name: str
    prepare: Callable[[], Any]
    shards: list[str]
    sources: list[str]
    options: dict[str, Any]


def measure(storage: Storage, args: argparse.Namespace, size: int) -> dict[str, Any]:
    """One storage, one round: a plain read, then the index, each after `prepare()`."""
    name, options = storage.name, storage.options
    read_s = plain_read(storage.shards, args.workers, options, storage.prepare)
    storage.prepare()
    index_s = index_run(storage.sources, args.work / f"index-{name}", args.workers, options)
    row = {
        "read_s": read_s,
        "index_s": index_s,
        "read_mb_s": size / read_s / 1e6,
        "index_mb_s": size / index_s / 1e6,
        "ratio": read_s / index_s,
        "load": sysinfo.load(),
    }
    print(
        f"{name}: read {row['read_mb_s']:.1f} MB/s, index {row['index_mb_s']:.1f} MB/s, "
        f"ratio {row['ratio']:.2f}",
        file=sys.stderr,
    )
    return row


def read_epoch(path: Path, workers: int, crop: int) -> float:
    from fastpack.reader import Dataset, RandomResizedCrop, make_loader  # noqa: PLC0415 -- on use

    loader = make_loader(
        Dataset(path, transform=RandomResizedCrop(crop)), batch_size=64, num_workers=workers
    )
    started, count = time.perf_counter(), 0
    for images, _ in loader:
        count += len(images)
    return count / (time.perf_counter() - started)


def reading(tars: Path, args: argparse.Namespace) -> dict[str, Any]:
    """The indexed dataset's loader against the built one's, alternating, per round."""
    from fastpack.compiler import (  # noqa: PLC0415 -- on use
        BuildOptions,
        IndexOptions,
        build,
        index_shards,
    )

    built, indexed = args.work / "built", args.work / "indexed"
    for path in (built, indexed):
        shutil.rmtree(path, ignore_errors=True)
    build(tars, built, BuildOptions(workers=args.workers, progress=False))
    index_shards([tars], indexed, IndexOptions(workers=args.workers))
    read_epoch(built, args.workers, args.crop)  # warm-up: imports, page cache
    read_epoch(indexed, args.workers, args.crop)
    rounds: list[dict[str, Any]] = []
    for _ in range(args.rounds):
        b = read_epoch(built, args.workers, args.crop)
        a = read_epoch(indexed, args.workers, args.crop)
        rounds.append(
            {"built_img_s": b, "indexed_img_s": a, "ratio": a / b, "load": sysinfo.load()}
        )
        print(f"read: built {b:.0f} img/s, indexed {a:.0f} img/s, {a / b:.3f}", file=sys.stderr)
    ratios = [float(r["ratio"]) for r in rounds]
    return {"rounds": rounds, "ratio_median": statistics.median(ratios)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    tars = args.work / "tars"
    shutil.rmtree(args.work, ignore_errors=True)
    size = make_tars(tars, args.samples, args.shards, args.side)
    names = sorted(p.name for p in tars.glob("*.tar"))
    storages: dict[str, list[dict[str, Any]]] = {s: [] for s in args.storages}
    dropped = drop_caches()
    with ExitStack() as stack:
        setups = _setups(stack, args, tars, names)
        for _ in range(args.rounds):
            for name in args.storages:
                storages[name].append(measure(setups[name], args, size))
    report = {
        "machine": sysinfo.machine(),
        "versions": sysinfo.versions(DISTRIBUTIONS),
        "commit": sysinfo.fastpack_commit(REPO),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
        "corpus": {"samples": args.samples, "shards": len(names), "bytes": size, "side": args.side},
        "workers": args.workers,
        "page_cache_dropped": dropped,
        "shaping": {
            "s3_delay_ms": args.s3_delay_ms,
            "s3_rate_mb_s": args.s3_rate_mbs,
            "sshfs_delay_ms": args.sshfs_delay_ms,
        },
        "storages": {
            name: {"rounds": rows, "ratio_median": statistics.median(r["ratio"] for r in rows)}
            for name, rows in storages.items()
        },
    }
    if not args.skip_reading:
        report["reading"] = reading(tars, args)
    return report


def _setups(
    stack: ExitStack, args: argparse.Namespace, tars: Path, names: list[str]
) -> dict[str, Storage]:
    """Each storage of `args.storages`, the shards put there."""
    setups: dict[str, Storage] = {}
    local = [str(tars / n) for n in names]
    setups["local"] = Storage("local", drop_caches, local, [str(tars)], {})
    if "sshfs" in args.storages:
        setups["sshfs"] = _sshfs(stack, args, tars, names)
    if "s3" in args.storages:
        setups["s3"] = _s3(stack, args, tars, names)
    return setups


def _sshfs(stack: ExitStack, args: argparse.Namespace, tars: Path, names: list[str]) -> Storage:
    sys.path.insert(0, str(REPO))
    from tests.network_fs import SshServer, mounted  # noqa: PLC0415 -- checkout

    server = stack.enter_context(SshServer(args.work / "sshd"))
    mount = args.work / "mount"
    state: dict[str, ExitStack] = {}

    def remount() -> None:
        if "mount" in state:
            state["mount"].close()
        drop_caches()
        inner = ExitStack()
        inner.enter_context(mounted(server, tars, mount, delay_s=args.sshfs_delay_ms / 1000))
        state["mount"] = inner

    stack.callback(lambda: state["mount"].close() if "mount" in state else None)
    return Storage("sshfs", remount, [str(mount / n) for n in names], [str(mount)], {})


def _s3(stack: ExitStack, args: argparse.Namespace, tars: Path, names: list[str]) -> Storage:
    sys.path.insert(0, str(REPO))
    from fastpack.storage import Location  # noqa: PLC0415 -- on use

    from benchmarks.streaming._proxy_process import ProxyProcess  # noqa: PLC0415 -- checkout
    from tests.s3_server import S3Server  # noqa: PLC0415 -- checkout
    from tests.shaping_proxy import via  # noqa: PLC0415 -- checkout

    root = Path(tempfile.mkdtemp(prefix="seaweedfs-", dir=args.work))
    server = S3Server(root)
    server.start()
    stack.callback(server.stop)
    bucket = server.new_bucket()
    url = f"s3://{bucket}/tars"
    location = Location(url, server.storage_options)
    for name in names:
        location.upload(tars / name, name)
    proxy = stack.enter_context(ProxyProcess(server.endpoint, args.s3_rate_mbs * 1e6))
    proxy.set_delay(args.s3_delay_ms / 1000)
    options = via(server.storage_options, proxy.endpoint)
    shards = [f"{url}/{n}" for n in names]
    return Storage("s3", lambda: None, shards, [f"{url}/"], options)


def page(report: dict[str, Any]) -> str:
    lines = [
        "# `fastpack index` against a plain read of the same shards",
        "",
        f"Commit {report['commit']}, {report['date']}; {report['machine']['cpu']}, "
        f"{report['machine']['cores']} cores; {report['workers']} processes for both the read "
        f"and the index. Corpus: {report['corpus']['samples']} samples "
        f"({report['corpus']['side']} px JPEG, label, caption) in {report['corpus']['shards']} "
        f"tars written by webdataset.ShardWriter, {report['corpus']['bytes'] / 1e6:.0f} MB. "
        f"Page cache dropped before local runs: {report['page_cache_dropped']}.",
        "",
        "| storage | plain read MB/s (rounds) | index MB/s (rounds) | index / read (median) |",
        "|---|---|---|---|",
    ]
    for name, found in report["storages"].items():
        reads = ", ".join(f"{r['read_mb_s']:.1f}" for r in found["rounds"])
        indexes = ", ".join(f"{r['index_mb_s']:.1f}" for r in found["rounds"])
        lines.append(f"| {name} | {reads} | {indexes} | {found['ratio_median']:.2f} |")
    if "reading" in report:
        rounds = report["reading"]["rounds"]
        lines += [
            "",
            "Reading (map-style loader, RandomResizedCrop, batch 64): images/s per round.",
            "",
            "| built | indexed | indexed / built |",
            "|---|---|---|",
            *(
                f"| {r['built_img_s']:.0f} | {r['indexed_img_s']:.0f} | {r['ratio']:.3f} |"
                for r in rounds
            ),
        ]
    return "\n".join(lines) + "\n"


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--samples", type=int, default=6000)
    p.add_argument("--shards", type=int, default=16)
    p.add_argument("--side", type=int, default=256)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    p.add_argument("--crop", type=int, default=128)
    p.add_argument("--storages", nargs="+", choices=STORAGES, default=list(STORAGES))
    p.add_argument("--s3-delay-ms", type=float, default=20.0)
    p.add_argument("--s3-rate-mbs", type=float, default=50.0)
    p.add_argument("--sshfs-delay-ms", type=float, default=2.0)
    p.add_argument("--skip-reading", action="store_true")
    p.add_argument("--work", type=Path, default=Path("/tmp/adopt-bench"))
    p.add_argument("--out", type=Path)
    p.add_argument("--page", type=Path)
    return p.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse(argv)
    report = run(args)
    if args.out is not None:
        args.out.write_text(json.dumps(report, indent=1) + "\n")
    text = page(report)
    if args.page is not None:
        args.page.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
