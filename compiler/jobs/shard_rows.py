"""The index rows of the samples a shard job has written, and its rejects."""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from fastpack.formats import ABSENT, IndexPart, MemberLocation, pack_strings

from .shard_record import RejectLine

Column = npt.NDArray[Any]


@dataclass
class ShardRows:
    """The index rows and bookkeeping of the samples written so far."""

    labels: list[int] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    members: list[list[MemberLocation]] = field(default_factory=list)
    crc32: list[list[int]] = field(default_factory=list)
    # each sample's fields by schema position, where some sample lacks an optional one
    positions: list[list[int]] = field(default_factory=list)
    rejects: list[RejectLine] = field(default_factory=list)
    converted: int = 0

    def add(self, key: str, source: str, label: int, locations: list[MemberLocation],
            payloads: list[bytes]) -> None:  # fmt: skip
        self.keys.append(key)
        self.sources.append(source)
        self.labels.append(label)
        self.members.append(locations)
        self.crc32.append([zlib.crc32(p) for p in payloads])

    def part(self, shard: int, names: Sequence[str]) -> IndexPart:
        key_blob, key_offsets = pack_strings(self.keys)
        source_blob, source_offsets = pack_strings(self.sources)
        shape = (len(self.keys), len(names))
        if self.positions and any(len(p) != len(names) for p in self.positions):
            offsets, sizes, crc32 = self._sparse(shape)
        else:
            offsets = np.array([[m.data_offset for m in s] for s in self.members], "<u8")
            sizes = np.array([[m.size for m in s] for s in self.members], "<u8")
            offsets, sizes = offsets.reshape(shape), sizes.reshape(shape)
            crc32 = np.array(self.crc32, "<u4").reshape(shape)
        fields = range(len(names))
        return IndexPart(
            shard=shard,
            labels=np.array(self.labels, "<i8"),
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
        for i, (where, members, crcs) in enumerate(
            zip(self.positions, self.members, self.crc32, strict=True)
        ):
            offsets[i, where] = [m.data_offset for m in members]
            sizes[i, where] = [m.size for m in members]
            crc32[i, where] = crcs
        return offsets, sizes, crc32
