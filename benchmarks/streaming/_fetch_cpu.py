"""The CPU that downloading a dataset's shards costs, apart from decoding: every shard fetched
into a fresh directory by `Location.download`, as the streaming reader's prefetcher fetches it
(whole, checked against the manifest's CRC-32C, or its SHA-256 where it records none, several
shards at once), in a fresh process, whose CPU over the downloads (all its threads; user and
system apart) is divided by the MiB fetched."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any


def fetch_cpu(
    url: str, storage: dict[str, Any], work: Path, *, bulk: bool, shards_at_once: int
) -> dict[str, float]:
    """`{"cpu_ms_per_mib", "mib", "seconds"}` of fetching every shard of the dataset at `url`;
    `bulk` as the reader's workers fetch (obstore), otherwise through s3fs."""
    context = multiprocessing.get_context("spawn")
    answer = context.SimpleQueue()
    dest = Path(tempfile.mkdtemp(prefix="fetch-", dir=work))
    process = context.Process(
        target=_download_all, args=(url, storage, dest, (bulk, shards_at_once), answer)
    )
    process.start()
    process.join()
    shutil.rmtree(dest, ignore_errors=True)
    if process.exitcode != 0:
        raise RuntimeError(f"the download process exited with {process.exitcode}")
    result: dict[str, float] = answer.get()
    return result


def _download_all(
    url: str, storage: dict[str, Any], dest: Path, how: tuple[bool, int], answer: Any
) -> None:
    bulk, shards_at_once = how
    from fastpack.formats import MANIFEST_NAME  # noqa: PLC0415 -- on use: in the child whose CPU time is measured
    from fastpack.formats.manifest import manifest_from_text  # noqa: PLC0415 -- on use: in the child whose CPU time is measured
    from fastpack.storage import Expected, Location, Transfer  # noqa: PLC0415 -- on use: in the child whose CPU time is measured

    location = Location(url, storage)
    manifest = manifest_from_text(location.read_bytes(MANIFEST_NAME), url)
    (dest / "shards").mkdir(parents=True)

    def fetch(shard: Any) -> int:
        location.download(
            shard.name,
            dest / shard.name,
            Expected(size=shard.bytes, sha256=shard.sha256, crc32c=shard.crc32c),
            Transfer(part_bytes=8 << 20, threads=4, bulk=bulk),
        )
        (dest / shard.name).unlink()  # as a cache at its limit would
        return int(shard.bytes)

    before, wall = os.times(), time.perf_counter()
    with ThreadPoolExecutor(shards_at_once) as pool:
        fetched = sum(pool.map(fetch, manifest.shards))
    after, wall = os.times(), time.perf_counter() - wall
    user, system = after.user - before.user, after.system - before.system
    mib = fetched / 2**20
    answer.put(
        {
            "cpu_ms_per_mib": (user + system) * 1000 / mib,
            "mib": mib,
            "seconds": wall,
            "user_ms_per_mib": user * 1000 / mib,
            "system_ms_per_mib": system * 1000 / mib,
        }
    )
