"""The Markdown page of the shared-file-system benchmark (`SHARED_FS.md`), from its raw JSON.

Every ratio is paired: a run over the local loader, the mount's capability or webdataset of the
same round and delay; a row gives the median of those per-round ratios."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Record = dict[str, Any]
TARGET_DELAY_MS = 2.0
BOUND_SHARE = 0.9  # of min(local loader, mount capability)
PEER_FACTOR = 1.5  # times webdataset
PEER = "webdataset"


def _rate(record: Record, epoch: int = 0) -> float | None:
    if "error" in record or len(record["epochs"]) <= epoch:
        return None
    return float(record["epochs"][epoch]["images_per_s"])


@dataclass(frozen=True)
class References:
    """Per round, the local loader's images/s; per (round, delay), the mount's capability and
    webdataset's images/s."""

    local: dict[int, float]
    capability: dict[tuple[int, float], float]
    peer: dict[tuple[int, float], float]

    @classmethod
    def of(cls, report: dict[str, Any]) -> References:
        local = {r["round"]: _rate(r) for r in report["local"]}
        capability = {
            (c["round"], c["delay_ms"]): c.get("images_per_s") for c in report["capability"]
        }
        peer = {
            (r["round"], r["delay_ms"]): _rate(r) for r in report["runs"] if r["config"] == PEER
        }
        return cls(
            {k: v for k, v in local.items() if v is not None},
            {k: v for k, v in capability.items() if v is not None},
            {k: v for k, v in peer.items() if v is not None},
        )

    def bound(self, round_: int, delay_ms: float) -> float | None:
        local, capability = self.local.get(round_), self.capability.get((round_, delay_ms))
        return None if local is None or capability is None else min(local, capability)


@dataclass(frozen=True, kw_only=True)
class Row:
    """One configuration at one delay, over the rounds."""

    config: str
    delay_ms: float
    rates: list[float]
    second: list[float]
    startup_s: list[float]
    wall_s: list[float]
    x_bound: list[float]
    x_peer: list[float]
    amplification: list[float]
    cpu_ms: list[float]
    fs_cpu_ms: list[float]
    io: str
    failed: int


def _ratios(runs: Sequence[Record], reference: Callable[[int, float], float | None]) -> list[float]:
    found = []
    for run in runs:
        rate, ref = _rate(run), reference(run["round"], run["delay_ms"])
        if rate is not None and ref:
            found.append(rate / ref)
    return found


def summarize(report: dict[str, Any]) -> list[Row]:
    refs = References.of(report)
    size = report["dataset"]["bytes"]
    rows = []
    for delay in report["settings"]["delays_ms"]:
        for config in report["settings"]["configs"]:
            runs = [r for r in report["runs"] if r["config"] == config and r["delay_ms"] == delay]
            ok = [r for r in runs if "error" not in r]
            epochs = [r["epochs"][0] for r in ok]
            rows.append(
                Row(
                    config=config,
                    delay_ms=delay,
                    rates=[e["images_per_s"] for e in epochs],
                    second=[s for r in ok if (s := _rate(r, 1)) is not None],
                    startup_s=[r["startup_s"] for r in ok],
                    wall_s=[r["wall_s"] for r in ok],
                    x_bound=_ratios(ok, refs.bound),
                    x_peer=_ratios(ok, lambda r, d: refs.peer.get((r, d))),
                    amplification=[r["proxy_bytes"] / size for r in ok],
                    cpu_ms=[1000 * e["cpu_s"] / e["images"] for e in epochs],
                    fs_cpu_ms=[_fs_cpu_ms(r) for r in ok if "fs_cpu_s" in r],
                    io=", ".join(sorted({str(r["io"]) for r in ok})),
                    failed=len(runs) - len(ok),
                )
            )
    return rows


def _fs_cpu_ms(run: Record) -> float:
    return 1000 * float(run["fs_cpu_s"]) / sum(int(e["images"]) for e in run["epochs"])


def _median(values: Sequence[float], digits: int = 0, suffix: str = "") -> str:
    return f"{statistics.median(values):.{digits}f}{suffix}" if values else "-"


def _spread(values: Sequence[float]) -> str:
    return f"{min(values):.0f}-{max(values):.0f}" if values else "-"


def results_table(rows: Sequence[Row], second_epoch: bool) -> str:
    head = [
        "delay ms",
        "configuration",
        "shards read with",
        "img/s (median)",
        "range",
        "x bound",
        "x webdataset",
        "first batch s",
        "wall s",
        "read / dataset",
        "CPU ms/img",
        "FS CPU ms/img",
    ] + (["2nd epoch img/s"] if second_epoch else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in rows:
        name = f"`{row.config}`" + (f", {row.failed} failed" if row.failed else "")
        cells = [
            f"{row.delay_ms:g}",
            name,
            row.io or "-",
            _median(row.rates),
            _spread(row.rates),
            _median(row.x_bound, 2),
            "-" if row.config == PEER else _median(row.x_peer, 2),
            _median(row.startup_s, 2),
            _median(row.wall_s, 1),
            _median(row.amplification, 2),
            _median(row.cpu_ms, 2),
            _median(row.fs_cpu_ms, 2),
        ] + ([_median(row.second)] if second_epoch else [])
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def references_table(report: dict[str, Any]) -> str:
    lines = [
        "| delay ms | capability MB/s (median) | range | capability img/s (median) | range |",
        "|---|---|---|---|---|",
    ]
    for delay in report["settings"]["delays_ms"]:
        found = [c for c in report["capability"] if c["delay_ms"] == delay and "error" not in c]
        mbs = [c["bytes_per_s"] / 1e6 for c in found]
        images = [c["images_per_s"] for c in found]
        cells = [f"{delay:g}", _median(mbs), _spread(mbs), _median(images), _spread(images)]
        lines.append("| " + " | ".join(cells) + " |")
    local = [r for r in (_rate(x) for x in report["local"]) if r is not None]
    lines.append(
        f"\nLocal loader (`fastpack-auto` on the dataset's local directory, page cache warm): "
        f"median {_median(local)} img/s, range {_spread(local)}, {len(local)} run(s)."
    )
    return "\n".join(lines)


def verdicts(rows: Sequence[Row]) -> str:
    at = [r for r in rows if r.delay_ms == TARGET_DELAY_MS and r.config != PEER]
    if not at:
        return f"No fastpack configuration ran at {TARGET_DELAY_MS:g} ms: no verdict."
    lines = []
    for row in at:
        parts = []
        for ratios, target, what in (
            (row.x_bound, BOUND_SHARE, "min(local loader, mount capability)"),
            (row.x_peer, PEER_FACTOR, "webdataset"),
        ):
            if not ratios:
                parts.append(f"x {what}: not measured")
                continue
            median = statistics.median(ratios)
            verdict = "met" if median >= target else "not met"
            parts.append(f"{median:.2f}x {what} (target >= {target:g}: {verdict})")
        lines.append(f"- `{row.config}`: " + "; ".join(parts))
    return "\n".join(lines)


def _context(report: dict[str, Any]) -> str:
    m, s, d, c = report["machine"], report["settings"], report["dataset"], report["corpus"]
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items() if v != "not installed")
    rate = "none" if s["rate_mb_per_s"] is None else f"{s['rate_mb_per_s']:g} MB/s"
    return "\n".join(
        [
            f"- Date: {report['date']}; fastpack commit {report['commit']}",
            f"- Machine: {m['cpu']}, {m['cores']} cores, {m['ram_gib']} GiB RAM, "
            f"Linux {m['kernel']}, Python {m['python']}",
            f"- Load average (1, 5, 15 min) at the start and after each round: "
            f"{' / '.join(report['loads'])}",
            f"- Versions: {versions}",
            f"- Network file system: sshfs (SFTP over ssh, cipher `{s['cipher']}`, no compression) "
            f"to an sshd on 127.0.0.1, through a TCP proxy that holds every chunk the server sends "
            f"for the added delay (added to each round trip, bandwidth untouched); bandwidth cap "
            f"over all connections: {rate}. The server reads its files from its page cache; every "
            f"run mounts afresh, so the client's cache starts cold.",
            f"- Corpus: `{c['path']}`, {c['images']} JPEGs, mean {c['mean_kb']} KB, used "
            f"{s['copies']} time(s) under new file names",
            f"- Dataset: {d['samples']} samples in {d['shards']} shards (`--shard-size` "
            f"{s['shard_size']} bytes; largest {d['largest_shard'] / 2**20:.1f} MiB), "
            f"{d['bytes'] / 2**20:.1f} MiB in all files, mean sample {d['mean_sample_bytes']:.0f} "
            f"bytes of shard",
            f"- Workload: RandomResizedCrop 224 (scale 0.08-1, ratio 3/4-4/3) + flip, batches of "
            f"{s['batch_size']}, {s['workers']} DataLoader workers; {s['rounds']} round(s), each "
            f"running every delay and configuration in turn",
        ]
    )


DEFINITIONS = """\
- **Configurations**, each a fresh process on a fresh mount: `fastpack-auto` (`Dataset` with its
  default `io`), `fastpack-mmap` (`io="mmap"`), `fastpack-pread` (`io="pread"`), `streaming`
  (`StreamingDataset` of the mounted path), `streaming-cache` (the same with `cache_dir` a new
  directory on local disk), all with `RandomResizedCrop(224)` and `make_loader`; `webdataset`
  (`webdataset.WebDataset` over the same tars through the mount: shards shuffled and split over
  the workers, a 1,000-sample shuffle buffer, simplejpeg full decode + OpenCV crop and resize,
  batched in the workers; `peers/_wds.py`). "shards read with" is the dataset's `io` as
  resolved.
- **img/s**: the first epoch's images over the time from the first batch request (`iter`) to
  the last batch: cold. **first batch s**: from constructing the dataset (imports done) to the
  first batch. **wall s**: the whole process, interpreter start-up and imports included.
- **bound**: min(local loader img/s of the round, the mount's capability at that delay in that
  round). **Capability**: bytes/s of `workers` threads each reading a different shard whole in
  8 MiB reads through a fresh mount, over the mean sample size (shard bytes / samples).
- **read / dataset**: bytes the proxy sent to the client during the run (SFTP and ssh framing
  included) over the dataset's bytes (index, manifest and shards); with a second epoch, both
  epochs. **CPU ms/img**: user + system CPU of the loader process and its workers during the
  first epoch, per image. **FS CPU ms/img**: CPU of the file system's processes on this same
  machine (the mount's sshfs and ssh, sshd and its SFTP server, the proxy) during the run, per
  image read (both epochs with a second one); the two compete for the same cores.
- **2nd epoch img/s** (with `--second-epoch`): the next epoch in the same process and mount.
"""


def _failures(report: dict[str, Any]) -> str:
    failed = [r for r in report["local"] + report["capability"] + report["runs"] if "error" in r]
    lines = [
        f"- round {r['round']}, {r.get('delay_ms', 'local')} ms, {r.get('config', 'capability')}: "
        f"{r['error']}"
        for r in failed
    ]
    return "\n\n## Failed runs\n\n" + "\n".join(lines) if lines else ""


def markdown(report: dict[str, Any]) -> str:
    rows = summarize(report)
    second = bool(report["settings"]["second_epoch"])
    return (
        "# Cold epochs on a network file system (sshfs)\n\n"
        + _context(report)
        + "\n\n## Results\n\n"
        + results_table(rows, second)
        + "\n\n## References\n\n"
        + references_table(report)
        + f"\n\n## Target at {TARGET_DELAY_MS:g} ms\n\n"
        + f"Each fastpack configuration's cold epoch >= {BOUND_SHARE:g} x min(local loader, "
        + f"mount capability) and >= {PEER_FACTOR:g} x webdataset (medians of per-round "
        + "ratios):\n\n"
        + verdicts(rows)
        + "\n\n## What is measured\n\n"
        + DEFINITIONS.rstrip()
        + _failures(report)
        + f"\n\n## Command\n\n    {report['command']}\n"
    )
