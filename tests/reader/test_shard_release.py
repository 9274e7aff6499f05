"""`MappedShard.release_range` unmaps the aligned 2 MiB blocks around a read, and no others;
`PreadShard` maps nothing to release."""

from __future__ import annotations

from pathlib import Path

from fastpack.reader.shard_files import RELEASE_ALIGNMENT, MappedShard, PreadShard

MIB = 1 << 20


def mapped_kib(path: Path) -> int:
    """Resident KiB of this process's maps of `path` (smaps)."""
    total, current = 0, ""
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if "-" in fields[0] and len(fields) >= 5 and ":" in fields[3]:
            current = fields[5] if len(fields) > 5 else ""
        elif fields[0] == "Rss:" and current == str(path):
            total += int(fields[1])
    return total


def touch(shard: MappedShard, start: int, end: int) -> None:
    view = shard.read(start, end - start)
    sum(view[i] for i in range(0, end - start, 4096))


def test_a_range_release_unmaps_the_blocks_around_the_read(tmp_path: Path) -> None:
    assert RELEASE_ALIGNMENT == 2 * MIB
    path = tmp_path / "shard.tar"
    path.write_bytes(bytes(7 * MIB + 123))
    shard = MappedShard(path, 7 * MIB + 123, "shard 0")
    touch(shard, 0, shard.size)
    everything = mapped_kib(path)
    assert everything >= 7 * 1024
    shard.release_range(3 * MIB + 10, 100)  # in the block [2, 4) MiB
    assert everything - mapped_kib(path) == 2 * 1024
    shard.release_range(4 * MIB - 50, 100)  # across blocks [2, 4) and [4, 6) MiB
    assert everything - mapped_kib(path) == 4 * 1024
    shard.release_range(7 * MIB, 123)  # the last, short block [6, 7 MiB + 123)
    assert mapped_kib(path) == 2 * 1024  # [0, 2) MiB
    shard.release_range(0, 0)  # an empty read: its block
    assert mapped_kib(path) == 0
    assert bytes(shard.read(3 * MIB, 4)) == bytes(4)  # a released map reads again
    shard.close()


def test_a_pread_shard_has_nothing_to_release(tmp_path: Path) -> None:
    path = tmp_path / "shard.tar"
    path.write_bytes(b"x" * 5000)
    shard = PreadShard(path, 5000, "shard 0")
    shard.release_range(0, 5000)
    assert shard.read(10, 3) == b"xxx"
    shard.close()
