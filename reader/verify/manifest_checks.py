"""The checks of the manifest itself (formats/SPEC.md sections 2 and 9), shared by
`verify_dataset` and `verify_remote`: its bytes (the SHA-256 it records of its content, and the
canonical text, which together cover every byte), and its fields against what they describe:
the shards' file names, `key_width` against the index's keys, `classes` against the labels (and
in a dataset built from a folder, against the source paths), and `stats` against the index.

Each check returns its problems as lines naming the file; the per-sample checks run over the
index's memory-mapped sections in chunks, so that memory stays flat in the number of samples.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
from fastpack.formats import FastpackError, Index, Manifest, shard_name
from fastpack.formats.layout import shard_idx_name
from fastpack.formats.manifest import check_manifest_text

CHUNK_ROWS = 1 << 18  # rows of a per-sample check at a time: a few MiB of temporaries
_MAX_DIGITS = 19  # the longest key that fits a u64
_DIGIT_0, _DIGIT_9 = ord("0"), ord("9")


def manifest_text_problems(text: bytes, source: str, manifest: Manifest | None = None) -> list[str]:
    """The manifest's bytes (`manifest`, where it is already parsed from them): the SHA-256 it
    records of its content, and that they are the canonical text of what they hold (SPEC
    section 2)."""
    try:
        check_manifest_text(text, source, manifest)
    except FastpackError as e:
        return [f"{type(e).__name__}: {e}"]
    return []


def name_problems(manifest: Manifest, source: str) -> list[str]:
    """Each shard's `name` and `index_name` against the names SPEC section 1 gives its
    position."""
    problems = []
    for k, shard in enumerate(manifest.shards):
        expected = (shard_name(k, manifest.shard_format), shard_idx_name(k))
        if (shard.name, shard.index_name) != expected:
            problems.append(
                f"{source}: shard {k} is named {shard.name!r} with DALI index "
                f"{shard.index_name!r}, expected {expected[0]!r} and {expected[1]!r}"
            )
    return problems


def _chunks(count: int) -> Iterator[tuple[int, int]]:
    for start in range(0, count, CHUNK_ROWS):
        yield start, min(start + CHUNK_ROWS, count)


def key_problems(index: Index, manifest: Manifest, source: str) -> list[str]:
    """Every key `key_width` ASCII digits, the keys of a shard increasing, all unique (SPEC
    section 4); `source` names the index. Reads the keys in chunks: memory is one chunk and
    two numbers per shard (all the keys' numbers only where shards' key ranges overlap)."""
    width = manifest.key_width
    try:
        blob, offsets = index.string_table("key")
    except FastpackError as e:
        return [f"{type(e).__name__}: {e}"]
    keys = _Keys(blob, offsets, width, source)
    firsts: list[int] = []  # the first and last key of each run of rows of one shard
    lasts: list[int] = []
    previous: tuple[int, int] | None = None  # (shard, key) of the row before the chunk
    for start, stop in _chunks(index.num_samples):
        values, problem = keys.values(start, stop)
        if problem is not None:
            return [problem]
        if values is None:
            continue  # keys too wide for numbers: their width and digits only
        shard = np.asarray(index.shard[start:stop]).astype(np.int64)
        if previous is not None:
            shard, values = np.r_[previous[0], shard], np.r_[np.uint64(previous[1]), values]
        same = shard[1:] == shard[:-1]
        back = np.flatnonzero(same & (values[1:] <= values[:-1]))
        if back.size:
            k = int(back[0]) + 1
            i = start + k - (previous is not None)
            return [
                f"{source}: sample {i} has key {int(values[k])} after {int(values[k - 1])} in "
                f"the same shard {int(shard[k])}; keys increase within a shard"
            ]
        run_starts = np.flatnonzero(~same) + 1
        if previous is None:
            run_starts = np.r_[0, run_starts]
        if lasts:
            lasts[-1] = int(values[run_starts[0] - 1]) if run_starts.size else int(values[-1])
        firsts += values[run_starts].tolist()
        lasts += [*values[run_starts[1:] - 1].tolist(), int(values[-1])] if run_starts.size else []
        previous = int(shard[-1]), int(values[-1])
    if _disjoint(firsts, lasts):
        return []
    return _repeats(keys, index.num_samples, source)


class _Keys:
    """The keys of an index as numbers, chunk by chunk, checked to be `width` ASCII digits."""

    def __init__(
        self,
        blob: npt.NDArray[np.uint8],
        offsets: npt.NDArray[np.uint64],
        width: int,
        source: str,
    ) -> None:
        self.blob, self.offsets, self.width, self.source = blob, offsets, width, source

    def values(self, start: int, stop: int) -> tuple[npt.NDArray[np.uint64] | None, str | None]:
        """The keys of rows `[start, stop)` as numbers (None where `width` is too wide), or the
        problem of the first that is not `width` digits."""
        width, offsets = self.width, self.offsets
        lengths = np.diff(np.asarray(offsets[start : stop + 1]))
        wrong = np.flatnonzero(lengths != width)
        if wrong.size:
            i = start + int(wrong[0])
            return None, (
                f"{self.source}: sample {i} has key {_string(self.blob, offsets, i)!r} "
                f"({int(lengths[i - start])} bytes), the manifest's key_width is {width}"
            )
        if width == 0:
            return None, None
        begin = int(offsets[start])
        digits = np.asarray(self.blob[begin : begin + (stop - start) * width])
        digits = digits.reshape(stop - start, width)
        bad = np.flatnonzero(((digits < _DIGIT_0) | (digits > _DIGIT_9)).any(axis=1))
        if bad.size:
            i = start + int(bad[0])
            return None, (
                f"{self.source}: sample {i} has key {_string(self.blob, offsets, i)!r}, expected "
                f"{width} ASCII digits"
            )
        if width > _MAX_DIGITS:
            return None, None
        values = np.zeros(stop - start, np.uint64)
        for column in range(width):
            values = values * np.uint64(10) + (digits[:, column] - np.uint8(_DIGIT_0))
        return values, None


def _disjoint(firsts: list[int], lasts: list[int]) -> bool:
    """Whether the key ranges `[first, last]` of the shards' runs overlap nowhere."""
    order = np.argsort(np.array(firsts, np.uint64), kind="stable")
    first, last = np.array(firsts, np.uint64)[order], np.array(lasts, np.uint64)[order]
    return bool(np.all(first[1:] > last[:-1]))


def _repeats(keys: _Keys, n: int, source: str) -> list[str]:
    """A key held by two samples, found among all the keys' numbers (8 bytes a sample)."""
    values = np.empty(n, np.uint64)
    for start, stop in _chunks(n):
        chunk, _ = keys.values(start, stop)
        if chunk is None:
            return []
        values[start:stop] = chunk
    unique, counts = np.unique(values, return_counts=True)
    if np.all(counts == 1):
        return []
    repeated = int(unique[np.argmax(counts > 1)])
    rows = np.flatnonzero(values == repeated)[:2].tolist()
    return [f"{source}: samples {rows[0]} and {rows[1]} have the same key {repeated}"]


def _string(blob: npt.NDArray[np.uint8], offsets: npt.NDArray[np.uint64], i: int) -> str:
    """String `i` of a packed table, undecodable bytes replaced (for messages)."""
    return bytes(blob[int(offsets[i]) : int(offsets[i + 1])]).decode("utf-8", "replace")


def label_problems(index: Index, manifest: Manifest, source: str) -> list[str]:
    """With class names, every label names one (`-1` where the sample may have none), and in a
    dataset built from a folder, every source path starts with its class's folder."""
    classes = manifest.classes
    if not classes:
        return []
    schema = manifest.schema
    label_field = schema.label_field
    lowest = -1 if label_field is None or schema[label_field].optional else 0
    labels = index.label
    for start, stop in _chunks(index.num_samples):
        chunk: npt.NDArray[np.int64] = np.asarray(labels[start:stop], np.int64)
        bad = np.flatnonzero((chunk < lowest) | (chunk >= len(classes)))
        if bad.size:
            i = start + int(bad[0])
            return [
                f"{source}: sample {i} has label {int(labels[i])}, the manifest names "
                f"{len(classes)} classes (labels {lowest} to {len(classes) - 1})"
            ]
    if manifest.build.get("source_kind") == "folder":
        return _folder_problems(index, classes, source)
    return []


def _folder_problems(index: Index, classes: tuple[str, ...], source: str) -> list[str]:
    """In a dataset built from a folder, the source path of a sample of class `c` is
    `c/...` (the build's source is the folder of the class folders)."""
    try:
        blob, offsets = index.string_table("source")
    except FastpackError as e:
        return [f"{type(e).__name__}: {e}"]
    labels, size = index.label, blob.size
    names = [f"{c}/".encode("utf-8", "surrogateescape") for c in classes]
    for start, stop in _chunks(index.num_samples):
        chunk = np.asarray(labels[start:stop])
        for k, name in enumerate(names):
            rows = np.flatnonzero(chunk == k) + start
            if not rows.size:
                continue
            begin = np.asarray(offsets[rows]).astype(np.int64)
            length = np.asarray(offsets[rows + 1]).astype(np.int64) - begin
            at = np.minimum(begin[:, None] + np.arange(len(name)), max(size - 1, 0))
            found = np.asarray(blob)[at] if size else np.zeros(at.shape, np.uint8)
            expected = np.frombuffer(name, np.uint8)
            bad = np.flatnonzero((length < len(name)) | (found != expected).any(axis=1))
            if bad.size:
                i = int(rows[bad[0]])
                return [
                    f"{source}: sample {i} of class {k} ({classes[k]!r}) comes from "
                    f"{_string(blob, offsets, i)!r}, not from the class's folder "
                    f"{name.decode('utf-8', 'replace')!r}"
                ]
    return []


def stats_problems(index: Index, manifest: Manifest, source: str) -> list[str]:
    """`stats.samples` against `num_samples`, and `stats.payload_bytes` against the members'
    sizes in the index (`source`); `stats.rejected` is checked with the rejects file."""
    stats, problems = manifest.stats, []
    if "samples" in stats and stats["samples"] != manifest.num_samples:
        problems.append(
            f"{source}: stats.samples is {stats['samples']}, num_samples {manifest.num_samples}"
        )
    if "payload_bytes" in stats:
        total = sum(int(np.sum(index.sizes(f), dtype=np.uint64)) for f in manifest.fields)
        if total != stats["payload_bytes"]:
            problems.append(
                f"{source}: stats.payload_bytes is {stats['payload_bytes']}, the index's "
                f"members hold {total} bytes"
            )
    return problems
