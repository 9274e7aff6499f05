"""Where a shard job writes its samples: a tar (formats/SPEC.md section 4) or a TFRecord file
(section 4.2), each with the DALI index its reader needs (section 5)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import BinaryIO, Protocol

from fastpack.formats import Schema
from fastpack.formats.schema import V1_SCHEMA
from fastpack.formats.tar_shard import MemberLocation, TarShardWriter
from fastpack.formats.tfrecord import RecordShardWriter, format_record_index
from fastpack.formats.wds_index import join_wds_index, wds_index_line

Members = Sequence[tuple[str, bytes]]


class ShardSink(Protocol):
    def add(
        self, key: str, members: Members, image_size: tuple[int, int] | None
    ) -> tuple[list[MemberLocation], list[bytes]]:
        """Write one sample; return where each member's bytes landed and the bytes stored (what
        the index's CRC-32 covers)."""
        ...

    def finish(self) -> int:
        """Close the shard's structure; return its size in bytes."""
        ...

    def dali_index(self) -> str:
        """The text of the DALI index beside the shard."""
        ...


class TarSink:
    """Keeps each sample's DALI index line, not its member objects: a shard of small images
    holds over a hundred thousand samples."""

    def __init__(self, file: BinaryIO) -> None:
        self._writer = TarShardWriter(file)
        self._lines: list[str] = []

    def add(
        self, key: str, members: Members, image_size: tuple[int, int] | None
    ) -> tuple[list[MemberLocation], list[bytes]]:
        locations = self._writer.add_sample(key, members)
        self._lines.append(wds_index_line(locations))
        return locations, [data for _, data in members]

    def finish(self) -> int:
        return self._writer.finish()

    def dali_index(self) -> str:
        return join_wds_index(self._lines)


class RecordSink:
    def __init__(self, file: BinaryIO, schema: Schema | None) -> None:
        self._writer = RecordShardWriter(file, schema if schema is not None else V1_SCHEMA)

    def add(
        self, key: str, members: Members, image_size: tuple[int, int] | None
    ) -> tuple[list[MemberLocation], list[bytes]]:
        written = self._writer.add_sample(key, members, image_size)
        return written.locations, written.stored

    def finish(self) -> int:
        return self._writer.finish()

    def dali_index(self) -> str:
        return format_record_index(self._writer.records)


def open_sink(file: BinaryIO, shard_format: str, schema: Schema | None) -> ShardSink:
    """A sink writing `shard_format` shards of `schema` (None: image + class) to `file`."""
    return RecordSink(file, schema) if shard_format == "tfrecord" else TarSink(file)
