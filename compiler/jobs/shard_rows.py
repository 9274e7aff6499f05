"""The index rows of the samples a shard job has written, and its rejects."""

from __future__ import annotations

import zlib
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import ABSENT, IndexPart
from fastpack.formats.tar_shard import MemberLocation

from .shard_record import DuplicateLine, KeptLine, RejectLine

Column = npt.NDArray[Any]


def _strings(blob: bytearray, ends: array[int]) -> tuple[Column, Column]:
    offsets = np.zeros(len(ends) + 1, dtype="<u8")
    offsets[1:] = np.frombuffer(ends, dtype=np.uint64)
    return np.frombuffer(bytes(blob), dtype=np.uint8), offsets


@dataclass
class ShardRows:
    """The index rows and bookkeeping of the samples written so far, in flat arrays (a shard of
    small images holds over a hundred thousand samples: no Python object per sample)."""

    labels: array[int] = field(default_factory=lambda: array("q"))
    # each member's (data offset, size), and the CRC-32 of its bytes, sample after sample
    members: array[int] = field(default_factory=lambda: array("Q"))
    crc32: array[int] = field(default_factory=lambda: array("I"))
    key_blob: bytearray = field(default_factory=bytearray)
    key_ends: array[int] = field(default_factory=lambda: array("Q"))
    source_blob: bytearray = field(default_factory=bytearray)
    source_ends: array[int] = field(default_factory=lambda: array("Q"))
    # each sample's fields by schema position, where some sample lacks an optional one
    positions: list[list[int]] = field(default_factory=list)
    rejects: list[RejectLine] = field(default_factory=list)
    kept: list[KeptLine] = field(default_factory=list)  # stored otherwise than asked, and why
    duplicates: list[DuplicateLine] = field(default_factory=list)  # left out, not rejected
    converted: int = 0

    def __len__(self) -> int:
        return len(self.labels)

    def add(
        self,
        key: str,
        source: str,
        label: int,
        locations: list[MemberLocation],
        payloads: list[bytes],
    ) -> None:
        self.key_blob += key.encode("utf-8")
        self.key_ends.append(len(self.key_blob))
        self.source_blob += source.encode("utf-8")
        self.source_ends.append(len(self.source_blob))
        self.labels.append(label)
        for m in locations:
            self.members.extend((m.data_offset, m.size))
        self.crc32.extend(zlib.crc32(p) for p in payloads)

    def part(self, shard: int, names: Sequence[str]) -> IndexPart:
        key_blob, key_offsets = _strings(self.key_blob, self.key_ends)
        source_blob, source_offsets = _strings(self.source_blob, self.source_ends)
        shape = (len(self), len(names))
        if self.positions and any(len(p) != len(names) for p in self.positions):
            offsets, sizes, crc32 = self._sparse(shape)
        else:
            pairs = np.frombuffer(self.members, dtype=np.uint64).reshape(-1, 2)
            offsets = pairs[:, 0].astype("<u8").reshape(shape)
            sizes = pairs[:, 1].astype("<u8").reshape(shape)
            crc32 = np.frombuffer(self.crc32, dtype=np.uint32).astype("<u4").reshape(shape)
        fields = range(len(names))
        return IndexPart(
            shard=shard,
            labels=np.frombuffer(self.labels, dtype=np.int64).astype("<i8"),
            key_blob=key_blob,
            key_offsets=key_offsets,
            source_blob=source_blob,
            source_offsets=source_offsets,
            offsets={names[f]: offsets[:, f].copy() for f in fields},
            sizes={names[f]: sizes[:, f].copy() for f in fields},
            crc32={names[f]: crc32[:, f].copy() for f in fields},
        )

    def _sparse(self, shape: tuple[int, int]) -> tuple[Column, Column, Column]:
        """Field arrays where absent members are `ABSENT`, size 0, crc 0."""
        offsets = np.full(shape, ABSENT, "<u8")
        sizes, crc32 = np.zeros(shape, "<u8"), np.zeros(shape, "<u4")
        pairs = np.frombuffer(self.members, dtype=np.uint64).reshape(-1, 2)
        crcs = np.frombuffer(self.crc32, dtype=np.uint32)
        start = 0
        for i, where in enumerate(self.positions):
            stop = start + len(where)
            offsets[i, where] = pairs[start:stop, 0]
            sizes[i, where] = pairs[start:stop, 1]
            crc32[i, where] = crcs[start:stop]
            start = stop
        return offsets, sizes, crc32
