"""TFRecord shards: build speed against tar shards, and converting existing TFRecords into a
fastpack dataset against TensorFlow merely iterating the same files. Writes a JSON report.

    python -m benchmarks.builds.tfrecord_bench --corpus /tmp/photo-corpus-1200 --out tfrecord.json

- build: tar and tfrecord pass-through builds of the corpus, alternated `--rounds` times in this
  process (fresh output each time), images/s of each;
- conversion: TensorFlow's `tf.data.TFRecordDataset` iterating every record of the tfrecord
  build's shards (in a child process that imports TensorFlow before its clock starts), against
  `fastpack build <shards>/*.tfrecord OUT` of the same files (tar output, then tfrecord output),
  records/s of each, alternated `--rounds` times.
Reading speed (map-style loader over tar and tfrecord shards) is `reader_bench` with the peers
`fastpack,fastpack-tfrecord`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Literal, cast

from benchmarks import sysinfo as _sysinfo
from benchmarks.readers.peers._base import imagefolder_root, list_imagefolder

TF_ITERATE = """
import json, sys, time
import tensorflow as tf
files = json.loads(sys.argv[1])
rates = []
for _ in range(int(sys.argv[2])):
    began, n = time.perf_counter(), 0
    for _record in tf.data.TFRecordDataset(files):
        n += 1
    rates.append(n / (time.perf_counter() - began))
print("RESULT " + json.dumps({"rates": rates, "records": n, "tensorflow": tf.__version__}))
"""


def summary(rates: list[float]) -> dict[str, Any]:
    return {"median": statistics.median(rates), "min": min(rates), "max": max(rates), "runs": rates}


def timed_build(source: str, out: Path, workers: int, shard_format: str) -> float:
    """Seconds of one build of `source` into a fresh `out`."""
    from fastpack.compiler import BuildOptions, build  # noqa: PLC0415 -- on use

    shutil.rmtree(out, ignore_errors=True)
    options = BuildOptions(
        workers=workers,
        shard_size=16 << 20,
        shard_format=cast(Literal["tar", "tfrecord"], shard_format),
        progress=False,
    )
    began = time.perf_counter()
    build(source, out, options)
    return time.perf_counter() - began


def build_speed(args: argparse.Namespace, images: int) -> dict[str, Any]:
    source = str(imagefolder_root(args.corpus))
    rates: dict[str, list[float]] = {"tar": [], "tfrecord": []}
    for _ in range(args.rounds):
        for shard_format, found in rates.items():
            out = args.workdir / f"build-{shard_format}"
            found.append(images / timed_build(source, out, args.workers, shard_format))
    ratio = statistics.median(rates["tfrecord"]) / statistics.median(rates["tar"])
    return {"tar": summary(rates["tar"]), "tfrecord": summary(rates["tfrecord"]), "ratio": ratio}


def tensorflow_iteration(files: list[str], repeats: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", TF_ITERATE, json.dumps(files), str(repeats)],
        capture_output=True,
        text=True,
        check=True,
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line[len("RESULT ") :])
    return result


def conversion_speed(args: argparse.Namespace) -> dict[str, Any]:
    """TensorFlow iterating the tfrecord build's shards, against fastpack converting them."""
    shards = args.workdir / "build-tfrecord" / "shards"
    files = sorted(str(p) for p in shards.glob("*.tfrecord"))
    pattern = str(shards / "*.tfrecord")
    tf_rates: list[float] = []
    fastpack: dict[str, list[float]] = {"tar": [], "tfrecord": []}
    records = 0
    for _ in range(args.rounds):
        found = tensorflow_iteration(files, 1)
        tf_rates += found["rates"]
        records = found["records"]
        for shard_format, converted in fastpack.items():
            out = args.workdir / f"convert-{shard_format}"
            seconds = timed_build(pattern, out, args.workers, shard_format)
            converted.append(records / seconds)
    tf_median = statistics.median(tf_rates)
    return {
        "records": records,
        "files": len(files),
        "tensorflow_iteration": summary(tf_rates),
        "tensorflow": found["tensorflow"],
        "fastpack_to_tar": summary(fastpack["tar"]),
        "fastpack_to_tfrecord": summary(fastpack["tfrecord"]),
        "ratio_to_tar": statistics.median(fastpack["tar"]) / tf_median,
        "ratio_to_tfrecord": statistics.median(fastpack["tfrecord"]) / tf_median,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", type=Path, required=True, help="ImageFolder root")
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/tfrecord-bench"))
    parser.add_argument("--out", type=Path, required=True, help="JSON report")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    args.workdir.mkdir(parents=True, exist_ok=True)
    images = len(list_imagefolder(imagefolder_root(args.corpus)))
    report: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "commit": _sysinfo.fastpack_commit(Path(__file__).resolve().parents[1]),
        "machine": _sysinfo.machine(),
        "versions": _sysinfo.versions(),
        "corpus": _sysinfo.corpus(args.corpus),
        "workers": args.workers,
        "rounds": args.rounds,
        "load_before": _sysinfo.load(),
    }
    report["build"] = build_speed(args, images)
    print("build", json.dumps(report["build"]), flush=True)
    report["conversion"] = conversion_speed(args)
    print("conversion", json.dumps(report["conversion"]), flush=True)
    report["load_after"] = _sysinfo.load()
    args.out.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
