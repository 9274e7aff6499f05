"""The shared-file-system benchmark's dataset: the corpus repeated under new file names (hard
links in a new ImageFolder tree), built once with fastpack and kept in the work directory."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from fastpack.formats import MANIFEST_NAME, read_manifest

from benchmarks.readers.peers._base import imagefolder_root, list_imagefolder


@dataclass(frozen=True, kw_only=True)
class DatasetFacts:
    """What the report needs to know about the built dataset."""

    path: str
    samples: int
    shards: int
    bytes: int  # all files: index, manifest and shards
    shard_bytes: int
    largest_shard: int
    shard_names: tuple[str, ...]  # relative to `path`, largest first

    @property
    def mean_sample_bytes(self) -> float:
        return self.shard_bytes / self.samples


def _link(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system
        target.symlink_to(source.resolve())


def repeat_corpus(corpus: Path, copies: int, out: Path) -> Path:
    """`out/<class>/cNN-<name>`: every image of `corpus`'s ImageFolder `copies` times."""
    samples = list_imagefolder(imagefolder_root(corpus))
    shutil.rmtree(out, ignore_errors=True)
    for sample in samples:
        directory = out / sample.path.parent.name
        directory.mkdir(parents=True, exist_ok=True)
        for copy in range(copies):
            _link(sample.path, directory / f"c{copy:02d}-{sample.path.name}")
    return out


def build_dataset(corpus: Path, copies: int, shard_size: int, workdir: Path) -> Path:
    """The dataset of `corpus` x `copies` with `shard_size`-byte shards, built unless the one in
    `workdir` was built from the same settings."""
    out = workdir / f"dataset-x{copies}-{shard_size}"
    stamp = out.with_suffix(".json")
    settings = {"corpus": str(corpus.resolve()), "copies": copies, "shard_size": shard_size}
    built = (out / MANIFEST_NAME).exists() and stamp.exists()
    if built and json.loads(stamp.read_text()) == settings:
        return out
    from fastpack.compiler import BuildOptions, build  # noqa: PLC0415 -- on use

    tree = repeat_corpus(corpus, copies, workdir / f"corpus-x{copies}")
    shutil.rmtree(out, ignore_errors=True)
    build(tree, out, BuildOptions(workers=2, progress=False, shard_size=shard_size))
    shutil.rmtree(tree)
    stamp.write_text(json.dumps(settings))
    return out


def dataset_facts(path: Path) -> DatasetFacts:
    manifest = read_manifest(path / MANIFEST_NAME)
    shards = sorted(manifest.shards, key=lambda s: -s.bytes)
    total = sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return DatasetFacts(
        path=str(path),
        samples=manifest.num_samples,
        shards=len(shards),
        bytes=total,
        shard_bytes=sum(s.bytes for s in shards),
        largest_shard=shards[0].bytes,
        shard_names=tuple(s.name for s in shards),
    )


def facts_dict(facts: DatasetFacts) -> dict[str, object]:
    return {**asdict(facts), "mean_sample_bytes": round(facts.mean_sample_bytes, 1)}
