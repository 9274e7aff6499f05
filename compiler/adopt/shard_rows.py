"""What indexing one shard gives: the index rows of its kept samples, its rejects, its DALI index
lines and the digest of its bytes; filled sample by sample by the shard's scan."""

from __future__ import annotations

import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from fastpack.formats import ABSENT, IndexPart
from fastpack.formats.string_table import pack_strings

from .stream import ShardDigest


@dataclass(frozen=True, slots=True)
class Located:
    """A field's member: where its data starts in the shard, and its bytes."""

    offset: int
    data: bytes


@dataclass
class ShardRows:
    """The rows of one shard, for `fields` (the schema's names, in order). Labels are final
    ints, or (`text_labels`) indices into `label_texts`, the shard's label texts in first-seen
    order, which the dataset numbers once every shard is indexed."""

    shard: int
    name: str
    fields: Sequence[str]
    keys: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    labels: list[int] = field(default_factory=list)
    offsets: dict[str, list[int]] = field(default_factory=dict)
    sizes: dict[str, list[int]] = field(default_factory=dict)
    crc32: dict[str, list[int]] = field(default_factory=dict)
    idx_lines: list[str] = field(default_factory=list)
    rejects: list[tuple[str, str | None, str]] = field(default_factory=list)
    label_texts: list[str] = field(default_factory=list)
    text_labels: bool = False
    inputs: int = 0
    digest: ShardDigest | None = None
    notes: list[str] = field(default_factory=list)
    _text_ids: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in self.fields:
            self.offsets[name], self.sizes[name], self.crc32[name] = [], [], []

    def text_label(self, text: str) -> int:
        """The shard's number of label text `text`."""
        found = self._text_ids.get(text)
        if found is None:
            found = self._text_ids[text] = len(self.label_texts)
            self.label_texts.append(text)
        return found

    def reject(self, path: str, field_name: str | None, reason: str) -> None:
        self.rejects.append((path, field_name, reason))

    def add(
        self,
        key: str,
        source: str,
        label: int,
        members: Mapping[str, Located],
        idx_line: str,
    ) -> None:
        """A kept sample: its members by field (absent fields left out)."""
        self.keys.append(key)
        self.sources.append(source)
        self.labels.append(label)
        for name in self.fields:
            found = members.get(name)
            if found is None:
                self.offsets[name].append(ABSENT)
                self.sizes[name].append(0)
                self.crc32[name].append(0)
            else:
                self.offsets[name].append(found.offset)
                self.sizes[name].append(len(found.data))
                self.crc32[name].append(zlib.crc32(found.data))
        self.idx_lines.append(idx_line)

    @property
    def samples(self) -> int:
        return len(self.keys)

    @property
    def payload_bytes(self) -> int:
        return sum(sum(sizes) for sizes in self.sizes.values())

    def part(self, shard: int, labels: Sequence[int]) -> IndexPart:
        """The index part of this shard, numbered `shard`, with final `labels`."""
        key_blob, key_offsets = pack_strings(self.keys)
        source_blob, source_offsets = pack_strings(self.sources)
        return IndexPart(
            shard=shard,
            labels=np.asarray(labels, dtype=np.int64),
            key_blob=key_blob,
            key_offsets=key_offsets,
            source_blob=source_blob,
            source_offsets=source_offsets,
            offsets={f: np.asarray(v, dtype=np.uint64) for f, v in self.offsets.items()},
            sizes={f: np.asarray(v, dtype=np.uint64) for f, v in self.sizes.items()},
            crc32={f: np.asarray(v, dtype=np.uint32) for f, v in self.crc32.items()},
        )

    @property
    def key_bytes(self) -> int:
        return sum(len(k.encode("utf-8")) for k in self.keys)

    @property
    def source_bytes(self) -> int:
        return sum(len(s.encode("utf-8")) for s in self.sources)
