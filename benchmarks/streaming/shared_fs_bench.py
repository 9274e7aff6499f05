"""Cold epochs on a network file system: fastpack's readers and webdataset through sshfs.

Builds the corpus (repeated `--copies` times under new names) into a dataset with
`--shard-size` shards, exports it with `sshd` on 127.0.0.1 (`tests.network_fs`) and mounts it
with sshfs through a proxy that adds `--delays` milliseconds to every round trip. Every loader
run is a fresh process on a fresh mount (a cold client cache), one epoch (two with
`--second-epoch`) of RandomResizedCrop 224 batches. Per round and delay it also measures what
the mount delivers to `--workers` parallel sequential readers, and once per round the local
loader (page cache warm): the bound is the smaller of the two. Needs root, sshfs and sshd.

    python -m benchmarks.streaming.shared_fs_bench --corpus /tmp/photo-corpus
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks import sysinfo as _sysinfo
from benchmarks.readers.reader_bench import warm_page_cache
from benchmarks.streaming._shared_fs_capability import parallel_read
from benchmarks.streaming._shared_fs_cpu import cpu_seconds_of, file_system_processes
from benchmarks.streaming._shared_fs_data import (
    DatasetFacts,
    build_dataset,
    dataset_facts,
    facts_dict,
)
from benchmarks.streaming._shared_fs_report import markdown
from benchmarks.streaming._shared_fs_run import CONFIGS
from fastpack.sizes import parse_size

REPO = Path(__file__).resolve().parents[2]
Record = dict[str, Any]
MIN_WORKER_BATCHES = 40  # per worker and epoch, for an epoch that is more than its start
# A mount, or a read through it, that failed: recorded as a failed run; the next one goes on.
MOUNT_ERRORS = (OSError, subprocess.SubprocessError, RuntimeError)


@dataclass
class Bench:
    """The settings, the server, the dataset, and the records so far (saved after each)."""

    args: argparse.Namespace
    server: Any  # tests.network_fs.SshServer
    dataset: Path
    facts: DatasetFacts
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def mountpoint(self) -> Path:
        return Path(self.args.workdir) / "mnt"

    @contextlib.contextmanager
    def mount(self, delay_ms: float) -> Iterator[Any]:
        """A fresh sshfs mount of the dataset (cold client cache); yields its proxy."""
        from tests.network_fs import mounted  # noqa: PLC0415 -- checkout

        rate = None if self.args.rate is None else self.args.rate * 1e6
        with mounted(
            self.server,
            self.dataset,
            self.mountpoint,
            delay_s=delay_ms / 1000,
            rate_bytes_per_s=rate,
        ) as proxy:
            yield proxy

    def add(self, kind: str, record: Record) -> None:
        self.report[kind].append(record)
        self.args.out_json.write_text(json.dumps(self.report, indent=1))


def proxy_bytes(proxy: Any) -> int:
    """What the server sent through `proxy` (a `LatencyProxy` that has stopped): a method of
    the proxy or, in older versions of it, an attribute."""
    count = proxy.bytes_to_clients
    return int(count() if callable(count) else count)


def launch(
    bench: Bench, config: str, path: Path, log: Path, cache_dir: Path | None = None
) -> Record:
    """`_shared_fs_run` in a fresh process: its RESULT, wall time (interpreter start-up
    included) and the CPU time of its whole process tree; or the error."""
    args = bench.args
    command = [
        sys.executable,
        "-m",
        "benchmarks.streaming._shared_fs_run",
        "--config",
        config,
        "--path",
        str(path),
        "--workers",
        str(args.workers),
        "--batch-size",
        str(args.batch_size),
        "--epochs",
        "2" if args.second_epoch else "1",
    ] + ([] if cache_dir is None else ["--cache-dir", str(cache_dir)])
    log.parent.mkdir(parents=True, exist_ok=True)
    cpu = _children_cpu()
    started = time.perf_counter()
    with log.open("w") as err:
        process = subprocess.Popen(
            command,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,  # its own process group, to end with its workers
        )
        try:
            stdout, _ = process.communicate(timeout=args.timeout)
        except BaseException as error:  # a timeout, Ctrl-C, SIGTERM: end its workers too
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            if not isinstance(error, subprocess.TimeoutExpired):
                raise
            return {"error": f"timed out after {args.timeout:.0f} s; see {log}"}
    record: Record = {"wall_s": time.perf_counter() - started, "tree_cpu_s": _children_cpu() - cpu}
    for line in stdout.splitlines():
        if line.startswith("RESULT "):
            return {**record, **json.loads(line.removeprefix("RESULT "))}
    return {"error": f"exit {process.returncode}: {_last_line(log)} (see {log})"}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _last_line(path: Path) -> str:
    lines = [line.strip() for line in path.read_text(errors="replace").splitlines() if line]
    return lines[-1] if lines else "no output"


def run_local(bench: Bench, round_: int) -> None:
    """`fastpack-auto` on the local dataset, page cache warm."""
    warm_page_cache(bench.dataset)
    log = bench.args.workdir / "logs" / f"r{round_}-local.log"
    record = launch(bench, "fastpack-auto", bench.dataset, log)
    bench.add("local", {"round": round_, **record})
    _say(f"round {round_} local: {_rate(record)}")


def run_capability(bench: Bench, round_: int, delay_ms: float) -> None:
    """`--workers` threads, each reading a different shard whole, on a fresh mount."""
    names = bench.facts.shard_names[: bench.args.workers]
    paths = [bench.mountpoint / name for name in names]
    record: Record = {"round": round_, "delay_ms": delay_ms, "readers": len(paths)}
    try:
        with bench.mount(delay_ms) as proxy:
            pids = file_system_processes(bench.mountpoint)
            fs_cpu = cpu_seconds_of(pids)
            read, seconds = parallel_read(paths)
            fs_cpu = cpu_seconds_of(pids) - fs_cpu
    except MOUNT_ERRORS as error:
        bench.add("capability", {**record, "error": f"{type(error).__name__}: {error}"})
        _say(f"round {round_} {delay_ms:g} ms capability: failed: {error}")
        return
    rate = read / seconds
    record |= {
        "bytes": read,
        "seconds": seconds,
        "bytes_per_s": rate,
        "proxy_bytes": proxy_bytes(proxy),
        "fs_cpu_s": fs_cpu,
        "images_per_s": rate / bench.facts.mean_sample_bytes,
    }
    bench.add("capability", record)
    _say(
        f"round {round_} {delay_ms:g} ms capability: {rate / 1e6:.1f} MB/s, "
        f"{record['images_per_s']:.0f} img/s"
    )


def run_config(bench: Bench, round_: int, delay_ms: float, config: str) -> None:
    """One loader run through a fresh mount; a fresh local cache for `streaming-cache`."""
    caches = bench.args.workdir / "caches"
    caches.mkdir(parents=True, exist_ok=True)
    cache = Path(tempfile.mkdtemp(dir=caches)) if config == "streaming-cache" else None
    log = bench.args.workdir / "logs" / f"r{round_}-{delay_ms:g}ms-{config}.log"
    try:
        with bench.mount(delay_ms) as proxy:
            pids = file_system_processes(bench.mountpoint)
            fs_cpu = cpu_seconds_of(pids)
            record = launch(bench, config, bench.mountpoint, log, cache)
            record["fs_cpu_s"] = cpu_seconds_of(pids) - fs_cpu
        record["proxy_bytes"] = proxy_bytes(proxy)
    except MOUNT_ERRORS as error:
        record = {"error": f"{type(error).__name__}: {error}"}
    finally:
        if cache is not None:
            shutil.rmtree(cache, ignore_errors=True)
    bench.add("runs", {"round": round_, "delay_ms": delay_ms, "config": config, **record})
    read = record.get("proxy_bytes", 0) / bench.facts.bytes
    _say(f"round {round_} {delay_ms:g} ms {config}: {_rate(record)}, read {read:.2f}x the dataset")


def _rate(record: Record) -> str:
    if "error" in record:
        return f"failed: {record['error']}"
    epoch = record["epochs"][0]
    return f"{epoch['images_per_s']:.0f} img/s, first batch {record['startup_s']:.2f} s"


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run_rounds(bench: Bench) -> None:
    args = bench.args
    for round_ in range(args.rounds):
        run_local(bench, round_)
        for delay_ms in args.delays:
            run_capability(bench, round_, delay_ms)
            for config in args.configs:
                run_config(bench, round_, delay_ms, config)
        bench.report["loads"].append(_sysinfo.load())


def new_report(args: argparse.Namespace, facts: DatasetFacts, argv: list[str]) -> dict[str, Any]:
    from tests.network_fs import CIPHER  # noqa: PLC0415 -- checkout

    return {
        "command": shlex.join(["python", "-m", "benchmarks.streaming.shared_fs_bench", *argv]),
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "machine": _sysinfo.machine(),
        "versions": _sysinfo.versions(),
        "commit": _sysinfo.fastpack_commit(REPO),
        "corpus": _sysinfo.corpus(args.corpus),
        "dataset": facts_dict(facts),
        "settings": {
            "copies": args.copies,
            "workers": args.workers,
            "batch_size": args.batch_size,
            "shard_size": args.shard_size,
            "delays_ms": args.delays,
            "rounds": args.rounds,
            "rate_mb_per_s": args.rate,
            "configs": args.configs,
            "second_epoch": args.second_epoch,
            "cipher": CIPHER,
        },
        "loads": [_sysinfo.load()],
        "local": [],
        "capability": [],
        "runs": [],
    }


def _unmount_stale(mountpoint: Path) -> None:
    """A mount left at `mountpoint` by a run that was killed."""
    if os.path.ismount(mountpoint):
        fusermount = shutil.which("fusermount3") or "fusermount"
        subprocess.run([fusermount, "-u", "-z", str(mountpoint)], check=False)


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--corpus", type=Path, default=Path("/tmp/photo-corpus"), help="ImageFolder")
    p.add_argument("--copies", type=int, default=4, help="times the corpus is repeated")
    p.add_argument("--workers", type=int, default=2, help="DataLoader workers")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--shard-size", type=parse_size, default="64MB")
    p.add_argument("--delays", default="0,0.5,2,5", help="ms added to each round trip")
    p.add_argument("--rounds", type=int, default=3, help="rounds, every configuration in each")
    p.add_argument("--configs", default=",".join(CONFIGS), help=", ".join(CONFIGS))
    p.add_argument("--rate", type=float, help="bandwidth cap of the proxy, MB/s (default none)")
    p.add_argument("--second-epoch", action="store_true", help="also time a second epoch")
    p.add_argument("--workdir", type=Path, default=Path("/tmp/fastpack-sharedfs"))
    p.add_argument("--timeout", type=float, default=1800, help="seconds per loader run")
    p.add_argument(
        "--out-json", type=Path, default=REPO / "benchmarks/streaming/shared_fs_results.json"
    )
    p.add_argument("--out-md", type=Path, default=REPO / "benchmarks/streaming/SHARED_FS.md")
    p.add_argument("--render", action="store_true", help="only re-render --out-json to --out-md")
    args = p.parse_args(argv)
    args.delays = [float(d) for d in args.delays.split(",") if d.strip()]
    args.configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    unknown = sorted(set(args.configs) - set(CONFIGS))
    if unknown:
        p.error(f"unknown configs {unknown}; configs are {', '.join(CONFIGS)}")
    if args.copies < 1 or args.workers < 1 or args.rounds < 1 or not args.delays:
        p.error("--copies, --workers and --rounds must be >= 1, --delays not empty")
    return args


def _stop_on_sigterm() -> None:
    """SIGTERM unwinds like Ctrl-C, so that every mount is unmounted and sshd stopped."""

    def handler(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    args = parse(argv)
    if not args.render:
        from tests.network_fs import SshServer, missing_tools  # noqa: PLC0415 -- checkout

        if missing := missing_tools():
            sys.exit(f"a sshfs mount needs {', '.join(missing)}")
        _stop_on_sigterm()
        args.workdir.mkdir(parents=True, exist_ok=True)
        _unmount_stale(args.workdir / "mnt")  # Bench.mountpoint
        dataset = build_dataset(args.corpus, args.copies, args.shard_size, args.workdir)
        facts = dataset_facts(dataset)
        if facts.samples < args.workers * args.batch_size * MIN_WORKER_BATCHES:
            _say(
                f"warning: {facts.samples} samples give each worker fewer than "
                f"{MIN_WORKER_BATCHES} batches: more --copies for steady-state rates"
            )
        with SshServer(args.workdir / "sshd") as server:
            bench = Bench(args, server, dataset, facts, new_report(args, facts, argv))
            run_rounds(bench)
    report = json.loads(args.out_json.read_text())
    args.out_md.write_text(markdown(report))
    _say(f"wrote {args.out_json} and {args.out_md}")


if __name__ == "__main__":
    main()
