"""Build outputs of the current tree against another commit's, byte for byte, on the photo corpus.

    python -m benchmarks.builds.identical --corpus /tmp/photo-corpus --before e94d24c \
        --work /tmp/identical --out benchmarks/builds/IDENTICAL.md

Each case runs `fastpack build` twice in subprocesses, once with the current tree and once with
the commit's code (its wheel, unpacked, first on PYTHONPATH: `commit_package`), on the same inputs,
and compares every file of the two outputs (for a URL target, every object under the prefix).
Cases: an ImageFolder with 2 workers, resized with 1 worker, into TFRecord shards; a JSONL list
with a caption, class ids and JSON (zstd, a trained dictionary); the tar and TFRecord shards of
the first builds read back as webdataset and TFRecord sources; an `s3://` target on a local
SeaweedFS server; a Dask cluster of 2 workers (its own per side); two node shares and the
finishing call. The page lists each case's files, bytes and whether they are identical.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.sysinfo import fastpack_commit, load, machine, versions
from tests.compiler.golden.write_digests import commit_package, short_sha
from tests.dask_cluster import LocalDaskCluster, start_cluster
from tests.s3_server import ACCESS_KEY, SECRET_KEY, S3Server

REPO = Path(__file__).resolve().parents[2]
VOCABULARY = "a dog cat on the red sofa near window two people walking in park with tall trees"
WORDS = (*VOCABULARY.split(), "under", "blue", "sky")


@dataclass
class Side:
    """One side of the comparison: its environment and, for the Dask case, its cluster."""

    name: str
    env: dict[str, str]
    scheduler: str = ""


def fastpack_build(side: Side, work: Path, *args: str) -> None:
    command = [sys.executable, "-m", "fastpack", "build", *args, "--no-progress"]
    done = subprocess.run(
        command, check=False, cwd=work, env=side.env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"{side.name}: {' '.join(command)} failed:\n{done.stderr}")


def tree_files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def store_files(server: S3Server, url: str) -> dict[str, bytes]:
    fs = server.filesystem()
    fs.invalidate_cache()
    prefix = url.removeprefix("s3://")
    return {path[len(prefix) + 1 :]: fs.cat_file(path) for path in sorted(fs.find(prefix))}


def write_list(corpus: Path, path: Path) -> tuple[Path, Path]:
    """A JSONL list of the corpus's images with a caption, class ids and JSON, and its schema."""
    rng, lines = random.Random(1), []
    for image in sorted(corpus.rglob("*.jpg")):
        caption = " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 14)))
        ids = sorted(rng.sample(range(80), rng.randint(1, 5)))
        meta = {"photographer": rng.randint(1, 500), "iso": rng.choice([100, 200, 400, 800])}
        item = {
            "path": str(image),
            "label": image.parent.name,
            "txt": caption,
            "labels": ids,
            "meta": meta,
        }
        lines.append(json.dumps(item) + "\n")
    path.write_text("".join(lines), encoding="utf-8")
    schema = path.with_suffix(".schema.json")
    fields = [
        {"name": "jpg", "type": "jpeg", "column": "path"},
        {"name": "cls", "type": "class", "column": "label"},
        {
            "name": "txt.zst",
            "type": "text",
            "column": "txt",
            "zstd": {"level": 19, "dictionary": True},
        },
        {"name": "labels.json", "type": "class_ids", "column": "labels"},
        {"name": "meta.json", "type": "json", "column": "meta"},
    ]
    schema.write_text(json.dumps({"fields": fields}), encoding="utf-8")
    return path, schema


Case = Callable[[Side, Path], dict[str, bytes]]


def cases(corpus: Path, inputs: Path, server: S3Server) -> dict[str, Case]:
    listing, schema = write_list(corpus, inputs / "fields.jsonl")
    small = ("--shard-size", "16MiB")

    def folder(side: Side, out: Path) -> dict[str, bytes]:
        fastpack_build(side, out.parent, str(corpus), str(out), "--workers", "2", *small)
        return tree_files(out)

    def resized(side: Side, out: Path) -> dict[str, bytes]:
        fastpack_build(
            side,
            out.parent,
            str(corpus),
            str(out),
            "--workers",
            "1",
            "--max-side",
            "256",
            "--quality",
            "85",
            *small,
        )
        return tree_files(out)

    def tfrecord_shards(side: Side, out: Path) -> dict[str, bytes]:
        fastpack_build(
            side,
            out.parent,
            str(corpus),
            str(out),
            "--workers",
            "2",
            "--shard-format",
            "tfrecord",
            "--shuffle-seed",
            "5",
            *small,
        )
        return tree_files(out)

    def fields(side: Side, out: Path) -> dict[str, bytes]:
        fastpack_build(
            side,
            out.parent,
            str(listing),
            str(out),
            "--workers",
            "2",
            "--schema",
            str(schema),
            *small,
        )
        return tree_files(out)

    def wds_source(side: Side, out: Path) -> dict[str, bytes]:
        shards = out.parent.parent / "before" / "folder" / "shards"
        fastpack_build(side, out.parent, str(shards), str(out), "--format", "wds", *small)
        return tree_files(out)

    def tfrecord_source(side: Side, out: Path) -> dict[str, bytes]:
        shards = out.parent.parent / "before" / "tfrecord_shards" / "shards"
        fastpack_build(side, out.parent, str(shards), str(out), "--format", "tfrecord", *small)
        return tree_files(out)

    def store(side: Side, out: Path) -> dict[str, bytes]:
        bucket = server.new_bucket()
        url = f"s3://{bucket}/ds"
        fastpack_build(
            side,
            out.parent,
            str(corpus),
            url,
            "--workers",
            "2",
            *small,
            "--staging",
            str(out.parent / "staging"),
        )
        return store_files(server, url)

    def dask(side: Side, out: Path) -> dict[str, bytes]:
        fastpack_build(
            side, out.parent, str(corpus), str(out), "--scheduler", side.scheduler, *small
        )
        return tree_files(out)

    def node_shares(side: Side, out: Path) -> dict[str, bytes]:
        for rank in ("0", "1"):
            fastpack_build(
                side,
                out.parent,
                str(corpus),
                str(out),
                "--workers",
                "1",
                *small,
                "--num-nodes",
                "2",
                "--node-rank",
                rank,
            )
        fastpack_build(
            side,
            out.parent,
            str(corpus),
            str(out),
            "--workers",
            "1",
            *small,
            "--num-nodes",
            "2",
            "--resume",
        )
        return tree_files(out)

    return {
        "folder": folder,
        "resized": resized,
        "tfrecord_shards": tfrecord_shards,
        "fields": fields,
        "wds_source": wds_source,
        "tfrecord_source": tfrecord_source,
        "store": store,
        "dask": dask,
        "node_shares": node_shares,
    }


@contextmanager
def cluster_for(side: Side, root: Path) -> Iterator[LocalDaskCluster]:
    """A Dask cluster whose workers import the side's code (they inherit its environment)."""
    root.mkdir(parents=True, exist_ok=True)
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(side.env)
    try:
        cluster = start_cluster(root)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    try:
        yield cluster
    finally:
        cluster.stop()


def compare(before: dict[str, bytes], after: dict[str, bytes]) -> dict[str, Any]:
    differ = sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
    digest = hashlib.sha256(b"".join(n.encode() + after[n] for n in sorted(after))).hexdigest()
    return {
        "files": len(after),
        "bytes": sum(map(len, after.values())),
        "differ": differ,
        "identical": not differ and bool(after),
        "digest": digest,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    work: Path = args.work
    shutil.rmtree(work, ignore_errors=True)
    (work / "inputs").mkdir(parents=True)
    (work / "seaweedfs").mkdir()
    server = S3Server(work / "seaweedfs")
    server.start()
    s3_env = {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_ENDPOINT_URL": server.endpoint,
        "AWS_DEFAULT_REGION": "us-east-1",
    }
    results: dict[str, Any] = {"load_start": load()}
    try:
        with commit_package(args.before) as lib:
            base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | s3_env
            sides = [Side("before", base | {"PYTHONPATH": str(lib)}), Side("after", base)]
            table = cases(args.corpus, work / "inputs", server)
            found: dict[str, dict[str, dict[str, bytes]]] = {name: {} for name in table}
            for side in sides:
                (work / side.name).mkdir()
                with cluster_for(side, work / f"dask-{side.name}") as cluster:
                    side.scheduler = cluster.address
                    for name, case in table.items():
                        out = work / side.name / name
                        out.parent.mkdir(parents=True, exist_ok=True)
                        found[name][side.name] = case(side, out)
                        print(side.name, name, len(found[name][side.name]), "files", flush=True)
            results["cases"] = {n: compare(f["before"], f["after"]) for n, f in found.items()}
    finally:
        server.stop()
    results.update(
        load_end=load(),
        machine=machine(),
        versions=versions(),
        before=short_sha(args.before),
        after=fastpack_commit(REPO),
        date=datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        corpus=str(args.corpus),
        images=len(list(args.corpus.rglob("*.jpg"))),
    )
    return results


def report(results: dict[str, Any]) -> str:
    rows = []
    for name, r in results["cases"].items():
        verdict = "yes" if r["identical"] else "NO: " + ", ".join(r["differ"][:5])
        rows.append(f"| {name} | {r['files']} | {r['bytes']:,} | {verdict} |")
    lines = [
        "# Build outputs: byte-identical to the previous compiler",
        "",
        f"Measured {results['date']} with `benchmarks/builds/identical.py` (see its docstring for "
        "the cases). Command:",
        "",
        f"    python -m benchmarks.builds.identical --corpus {results['corpus']} "
        f"--before {results['before']} --work /tmp/identical --out benchmarks/builds/IDENTICAL.md",
        "",
        f"Current tree: `{results['after']}`; compared with: `{results['before']}` (the compiler "
        "before the build, source, field-type and runner refactor).",
        f"Machine: `{json.dumps(results['machine'])}`",
        f"Versions: `{json.dumps(results['versions'])}`",
        f"Corpus: `{results['corpus']}`, {results['images']:,} JPEGs in class folders. Load "
        f"average: start `{results['load_start']}`, end `{results['load_end']}`.",
        "Raw: `identical_results.json`.",
        "",
        "| case | files | bytes | identical |",
        "| --- | ---: | ---: | --- |",
        *rows,
        "",
        "Every file of each output (shards, shard indexes, the index, rejects, dictionaries, the "
        "manifest; every object under the prefix for `store`) was compared byte for byte; "
        "nothing was normalized. The tests hold the same check on small inputs for every source "
        "format and field type: `tests/compiler/golden/`.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, required=True, help="an ImageFolder of JPEGs")
    parser.add_argument("--before", required=True, help="the commit to compare with")
    parser.add_argument("--work", type=Path, default=Path("/tmp/identical"))
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("IDENTICAL.md"))
    args = parser.parse_args()
    results = run(args)
    raw = args.out.with_name("identical_results.json")
    raw.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    args.out.write_text(report(results), encoding="utf-8")
    print(args.out)


if __name__ == "__main__":
    main()
