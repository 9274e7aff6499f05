"""What a build of the wild corpus made of each input, against what was expected.

`check_outcomes` reads the dataset's index (every sample's source path), its `rejects.jsonl`
and the corpus's `hostile.jsonl`: each regular input must be a sample; each hostile input must
meet its kind's expectation for the build configuration (`_wild_hostile.Expected`), a stored
hostile sample's bytes included. `tree_digests` and `compare_trees` check two outputs file by
file.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import simplejpeg
from fastpack.formats import INDEX_NAME, REJECTS_NAME, Index
from fastpack.formats.layout import shard_tar_name

_EXAMPLES = 5
_NUMBERS = re.compile(r"\d+")
_READ_BYTES = 1 << 20


def read_rejects(out: Path) -> dict[str, str]:
    """Source path -> reason, from `rejects.jsonl` (empty when there is none)."""
    path = out / REJECTS_NAME
    if not path.exists():
        return {}
    found = {}
    with path.open(encoding="utf-8") as file:
        for line in file:
            entry = json.loads(line)
            found[entry["path"]] = entry["reason"]
    return found


def reason_class(reason: str) -> str:
    """A reject's reason with its numbers replaced by N, cut to 160 characters: what the page
    counts rejects by."""
    return _NUMBERS.sub("N", reason)[:160]


def sample_sources(out: Path) -> dict[str, int]:
    """Source path -> sample number, for every sample of the dataset at `out`."""
    index = Index(out / INDEX_NAME)
    blob, offsets = index.string_table("source")
    text = bytes(blob).decode("utf-8", "surrogateescape")
    if not text.isascii():
        raise ValueError(f"{out}: source paths that are not ASCII; the corpus writes none")
    cuts = offsets.tolist()
    return {text[a:b]: i for i, (a, b) in enumerate(itertools.pairwise(cuts))}


def stored_image(out: Path, index: Index, i: int) -> bytes:
    shard = int(index.shard[i])
    tar = out / shard_tar_name(shard)
    _, offset, size = index.locate(i, "jpg", tar.stat().st_size)
    with tar.open("rb") as file:
        file.seek(offset)
        return file.read(size)


def _stored_as(kind_stored: str, original: bytes, stored: bytes) -> str | None:
    """Why `stored` does not meet `kind_stored` ("as-is", "converted", "upright"); None if it
    does."""
    if kind_stored == "as-is":
        return None if stored == original else "stored bytes differ from the input's"
    if stored == original:
        return "stored as it was, not converted"
    try:
        height, width, colorspace, _ = simplejpeg.decode_jpeg_header(stored)
    except ValueError as e:
        return f"stored bytes are not a JPEG ({e})"
    if colorspace != "YCbCr":
        return f"stored as {colorspace}, not YCbCr"
    if kind_stored == "upright":
        found = simplejpeg.decode_jpeg_header(original)
        if (height, width) != (found[1], found[0]):
            return f"stored {height} x {width}, expected {found[1]} x {found[0]} (turned upright)"
    return None


def _observed(path: str, samples: dict[str, int], rejects: dict[str, str]) -> tuple[str, str]:
    if path in samples:
        return "sample", ""
    if path in rejects:
        return "reject", rejects[path]
    return "absent", ""


def _outcome_miss(expected: dict[str, str], observed: tuple[str, str]) -> str | None:
    """Why the outcome alone misses the expectation (stored bytes aside); None where it meets
    it."""
    outcome, reason = observed
    if outcome == "absent":
        return "neither a sample nor a reject"
    if expected["outcome"] == "either":
        return None
    if outcome != expected["outcome"]:
        detail = f" ({reason})" if reason else ""
        return f"expected a {expected['outcome']}, found a {outcome}{detail}"
    pattern = expected.get("reason", "")
    if outcome == "reject" and not re.search(pattern, reason, re.IGNORECASE):
        return f"reject reason {reason!r} does not match /{pattern}/"
    return None


class Outcomes:
    """The samples and rejects of the dataset at `out` (none where the build did not finish);
    `of(entry, config, source)`: what became of a hostile input listed as `source`."""

    def __init__(self, corpus: Path, out: Path) -> None:
        self.corpus, self.out = corpus, out
        finished = (out / INDEX_NAME).exists()
        self.samples = sample_sources(out) if finished else {}
        self.rejects = read_rejects(out) if finished else {}
        self.index = Index(out / INDEX_NAME) if finished else None

    def of(self, entry: dict[str, Any], config: str, source: str) -> tuple[str, str | None]:
        """(what the build made of it, as the page counts it; why that misses the expectation,
        None where it meets it)."""
        observed = _observed(source, self.samples, self.rejects)
        label = observed[0] if observed[0] != "reject" else f"reject: {reason_class(observed[1])}"
        expected = entry["expected"][config]
        miss = _outcome_miss(expected, observed)
        stored, sample = expected.get("stored", ""), self.samples.get(source)
        if miss is not None or not stored or self.index is None or sample is None:
            return label, miss
        original = (self.corpus / entry["path"]).read_bytes()
        return label, _stored_as(stored, original, stored_image(self.out, self.index, sample))


def load_hostile(corpus: Path) -> list[dict[str, Any]]:
    with (corpus / "hostile.jsonl").open(encoding="utf-8") as file:
        return [json.loads(line) for line in file]


def check_outcomes(corpus: Path, out: Path, config: str, inputs: list[str]) -> dict[str, Any]:
    """Per hostile kind and for the regular inputs: counts, outcomes and the first misses."""
    found = Outcomes(corpus, out)
    samples, rejects = found.samples, found.rejects
    hostile = load_hostile(corpus)
    hostile_paths = {e["path"] for e in hostile}
    kinds: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"count": 0, "met": 0, "outcomes": Counter(), "misses": []}
    )
    for entry in hostile:
        label, miss = found.of(entry, config, entry["path"])
        kind = kinds[entry["kind"]]
        kind["count"] += 1
        kind["outcomes"][label] += 1
        if miss is None:
            kind["met"] += 1
        elif len(kind["misses"]) < _EXAMPLES:
            kind["misses"].append({"path": entry["path"], "why": miss})
    regular = [p for p in inputs if p not in hostile_paths]
    rejected = [p for p in regular if p in rejects]
    absent = [p for p in regular if p not in samples and p not in rejects]
    extra = len(samples) + len(rejects) - len(inputs)
    by_reason = Counter(reason_class(r) for r in rejects.values())
    return {
        "samples": len(samples),
        "rejects": len(rejects),
        "rejects_by_reason": dict(by_reason.most_common()),
        "regular": {
            "inputs": len(regular),
            "samples": len(regular) - len(rejected) - len(absent),
            "rejected": len(rejected),
            "rejected_examples": [{"path": p, "reason": rejects[p]} for p in rejected[:_EXAMPLES]],
            "absent": len(absent),
            "absent_examples": absent[:_EXAMPLES],
        },
        "unlisted_outcomes": extra,
        "hostile": {
            name: {**k, "outcomes": dict(k["outcomes"].most_common())}
            for name, k in sorted(kinds.items())
        },
        "all_met": not rejected
        and not absent
        and extra == 0
        and all(k["met"] == k["count"] for k in kinds.values()),
    }


def list_inputs(corpus: Path, list_name: str) -> list[str]:
    """The paths the list file names, in order."""
    with (corpus / list_name).open(encoding="utf-8") as file:
        next(file)
        return [line.rsplit(",", 1)[0] for line in file if line.strip()]


def file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        while chunk := file.read(_READ_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def tree_digests(root: Path) -> dict[str, tuple[int, str]]:
    """Relative path -> (bytes, SHA-256) of every file under `root`."""
    found = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory) / name
            found[str(path.relative_to(root))] = (path.stat().st_size, file_digest(path))
    return found


def compare_trees(a: Path, b: Path) -> dict[str, Any]:
    """Whether every file under `a` and `b` is the same, byte for byte."""
    da, db = tree_digests(a), tree_digests(b)
    differ = sorted(p for p in da.keys() & db.keys() if da[p] != db[p])
    only_a, only_b = sorted(da.keys() - db.keys()), sorted(db.keys() - da.keys())
    return {
        "files": len(da),
        "bytes": sum(size for size, _ in da.values()),
        "identical": not differ and not only_a and not only_b,
        "differ": differ[:20],
        "only_in_uninterrupted": only_a[:20],
        "only_in_resumed": only_b[:20],
    }
