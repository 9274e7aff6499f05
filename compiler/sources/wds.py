"""webdataset sources: a directory of `*.tar` (in name order), one `.tar`, or webdataset URLs.

URLs are what `webdataset.WebDataset` takes (see `wds_urls`): brace patterns
(`shards-{000000..000099}.tar`), `pipe:` commands and remote URLs (`s3://`, `http://`, ...),
expanded by webdataset in its order. Members group into samples by webdataset's rule
(`webdataset.tariterators`: `base_plus_ext` splits a name at the first dot of its base name into
key and extension, consecutive members with one key are a sample, extensions are lower-cased, and
`__name__` metadata members are skipped); a sample whose key is such a `__name__` (as for
`__meta__.json`) is metadata too and skipped. A sample's image is its `jpg`, `jpeg`, `png` or
`webp` member and its label the text of its `cls` member.

Shard jobs read images by offset from local files: a local tar in place, and a remote one from a
copy in the build directory (`<out>/.fastpack-build/sources/NNNNNN.tar`, NNNNNN its position in
the shard list), written once, streaming, while the shard is scanned. Such a source therefore
takes its size in local disk during the build; the build directory is deleted when the build
ends, and a resumed build reuses the copies that are complete.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ..errors import SourceError
from .labels import LabelTable
from .scan import PlanRow, SourceScan
from .wds_urls import Read, expand, is_local, is_wds_url, local_path, open_remote, shard_name

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

IMAGE_MEMBERS = ("jpg", "jpeg", "png", "webp")
COPIES_DIR = "sources"
_BLOCK = 512
_STREAM_BUFFER = 1 << 20
# tarfile's stream reads copy what is left of their buffer each time: larger makes small members
# slow, smaller makes more calls.
_TAR_BUFFER = 64 << 10
# webdataset.tariterators.tar_file_iterator's default `skip_meta`: metadata members it skips.
_SKIP_META = re.compile(r"__[^/]*__($|/)")
_META_KEY = re.compile(r"(^|/)__[^/]*__$")

SplitName = Callable[[str], tuple[str | None, str | None]]


@dataclass
class Sample:
    """A sample's key, its members by (lower-case) extension, and its `cls` member's data."""

    key: str
    members: dict[str, tarfile.TarInfo] = field(default_factory=dict)
    cls: bytes | None = None


@dataclass(frozen=True)
class _Shard:
    """One tar: `url` as errors name it, `name` as sample sources name it, `path` the local file
    read by offset (the copy, for a remote shard)."""

    url: str
    name: str
    path: Path
    remote: bool


def _is_member(info: tarfile.TarInfo) -> bool:
    """webdataset's `tar_file_iterator` filter: regular files but `__name__` metadata."""
    name = info.name
    if not info.isreg() or ("/" not in name and name.startswith("__") and name.endswith("__")):
        return False
    return _SKIP_META.match(name) is None


def samples(tar: tarfile.TarFile, url: str, split: SplitName | None = None) -> Iterator[Sample]:
    """The samples of `tar` (named `url` in errors) as webdataset's `group_by_keys` forms them,
    names split by `split` (default: webdataset's `base_plus_ext`); a `cls` member's data is read
    as it passes (a streamed tar cannot go back). SourceError for a sample with two members of
    one extension."""
    if split is None:
        from webdataset.tariterators import base_plus_ext  # noqa: PLC0415 - imports torch

        split = base_plus_ext
    sample: Sample | None = None
    while (info := tar.next()) is not None:
        tar.members = []  # type: ignore[attr-defined]  # tarfile keeps every header it reads; a tar may hold millions
        if not _is_member(info):
            continue
        key, ext = split(info.name)
        if key is None or ext is None:
            continue
        ext = ext.lower()
        if sample is None or key != sample.key:
            if sample is not None and not _META_KEY.search(sample.key):
                yield sample
            sample = Sample(key)
        if ext in sample.members:
            raise SourceError(f"{url}: sample {key!r} has two {ext!r} members")
        sample.members[ext] = info
        if ext == "cls":
            data = tar.extractfile(info)
            sample.cls = data.read() if data else b""
    if sample is not None and not _META_KEY.search(sample.key):
        yield sample


def _row(shard: _Shard, container: int, sample: Sample, labels: LabelTable) -> PlanRow:
    members = sample.members
    image = next((members[e] for e in IMAGE_MEMBERS if e in members), None)
    if image is None or sample.cls is None:
        missing = f"image member ({', '.join(IMAGE_MEMBERS)})" if image is None else "cls member"
        raise SourceError(
            f"{shard.url}: sample {sample.key!r} has no {missing}; members: {sorted(members)}"
        )
    text = sample.cls.decode("utf-8", "replace").strip()
    if not text:
        raise SourceError(f"{shard.url}: sample {sample.key!r} has an empty cls member")
    source = os.fsencode(f"{shard.name}:{sample.key}")
    return PlanRow(source, labels.id(text), image.size, container, image.offset_data)


def _tar_rows(
    tar: tarfile.TarFile,
    shard: _Shard,
    container: int,
    labels: LabelTable,
    check_end: Callable[[int], None],
) -> Iterator[PlanRow]:
    """The rows of one tar. `check_end` gets the offset where its members end before the last
    sample is looked at: a damaged tar is reported as such, not as a sample missing members."""
    last: Sample | None = None
    for sample in samples(tar, shard.url):
        if last is not None:
            yield _row(shard, container, last, labels)
        last = sample
    check_end(tar.offset)
    if last is not None:
        yield _row(shard, container, last, labels)


def _check_end(fd: int, end: int, url: str) -> None:
    """After the last member comes the end-of-archive block. tarfile stops without a word at a
    damaged header past the first, or at the end of the file, so this tells those apart."""
    size = os.fstat(fd).st_size
    block = os.pread(fd, _BLOCK, end)
    if len(block) < _BLOCK:
        raise SourceError(
            f"{url}: cut off at byte {size}: no tar end-of-archive block after its last member"
        )
    if block.strip(b"\0"):
        raise SourceError(
            f"{url}: byte {end} is not a valid tar member header (a damaged tar, or not a tar)"
        )


def _local_rows(shard: _Shard, container: int, labels: LabelTable) -> Iterator[PlanRow]:
    """A local tar, read in place: headers only, seeking over member data."""
    try:
        with shard.path.open("rb") as file, tarfile.open(fileobj=file, mode="r:") as tar:
            fd = file.fileno()
            size = os.fstat(fd).st_size
            for row in _tar_rows(
                tar, shard, container, labels, lambda end: _check_end(fd, end, shard.url)
            ):
                if row.offset + row.size > size:
                    raise SourceError(f"{shard.url}: cut off at byte {size}")
                yield row
    except (tarfile.ReadError, EOFError) as e:
        raise SourceError(f"{shard.url}: not a readable tar ({e})") from e
    except FileNotFoundError as e:
        raise SourceError(f"{shard.url}: not found") from e
    except OSError as e:
        raise SourceError(f"{shard.url}: cannot read: {e.strerror or e}") from e


class _Tee(io.RawIOBase):
    """Reads through `read`, writing every byte it returns to `copy`."""

    def __init__(self, read: Read, copy: BinaryIO) -> None:
        self._read, self._copy = read, copy

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int:
        view = memoryview(buffer).cast("B")
        data = self._read(len(view))
        self._copy.write(data)
        view[: len(data)] = data
        return len(data)


def _copied_rows(shard: _Shard, container: int, labels: LabelTable) -> Iterator[PlanRow]:
    """A remote tar, scanned as it streams into its copy; the copy takes its final name once it
    is whole and its tar structure checked."""
    part = shard.path.with_name(shard.path.name + ".part")
    with open_remote(shard.url) as read, part.open("w+b") as copy:
        stream = io.BufferedReader(_Tee(read, copy), _STREAM_BUFFER)

        def check_end(end: int) -> None:
            while stream.read(_STREAM_BUFFER):  # the end-of-archive blocks and what follows
                pass
            copy.flush()
            os.fsync(copy.fileno())
            _check_end(copy.fileno(), end, shard.url)

        try:
            with tarfile.open(fileobj=stream, mode="r|", bufsize=_TAR_BUFFER) as tar:
                yield from _tar_rows(tar, shard, container, labels, check_end)
        except (tarfile.ReadError, EOFError) as e:
            raise SourceError(f"{shard.url}: not a readable tar ({e})") from e
    os.replace(part, shard.path)


def _local_shards(path: Path) -> list[_Shard]:
    if path.is_dir():
        with os.scandir(path) as it:
            tars = sorted(e.name for e in it if e.name.endswith(".tar") and e.is_file())
        return [_Shard(str(path / name), name, path / name, remote=False) for name in tars]
    return [_Shard(str(path), path.name, path, remote=False)]


def _url_shards(source: str, work_dir: Path | None) -> list[_Shard]:
    shards = []
    for number, url in enumerate(expand(source)):
        if is_local(url):
            path = Path(os.path.abspath(local_path(url)))
            shards.append(_Shard(url, "", path, remote=False))
            continue
        if work_dir is None:
            raise SourceError(f"{url}: a remote shard needs a build directory to be copied to")
        copy = work_dir / COPIES_DIR / f"{number:06d}.tar"
        shards.append(_Shard(url, shard_name(url), copy, remote=True))
    return shards


def _containers(shards: list[_Shard]) -> tuple[Path, tuple[str, ...], list[_Shard]]:
    """The shards' common directory, their paths relative to it, and the shards with the names
    of local ones set to those relative paths."""
    parents = {os.path.abspath(s.path.parent) for s in shards}
    root = Path(os.path.commonpath(sorted(parents))) if parents else Path()
    relative = tuple(os.path.relpath(os.path.abspath(s.path), root) for s in shards)
    named = [
        s if s.remote or s.name else _Shard(s.url, rel, s.path, remote=False)
        for s, rel in zip(shards, relative, strict=True)
    ]
    return root, relative, named


def _rows(shards: list[_Shard], labels: LabelTable) -> Iterator[PlanRow]:
    for container, shard in enumerate(shards):
        if shard.remote and not shard.path.exists():
            shard.path.parent.mkdir(parents=True, exist_ok=True)
            yield from _copied_rows(shard, container, labels)
        else:
            yield from _local_rows(shard, container, labels)


def scan_wds(source: str | os.PathLike[str], work_dir: Path | None = None) -> SourceScan:
    """Open a webdataset source; remote shards are copied under `work_dir/sources/`."""
    text = os.fspath(source)
    shards = _url_shards(text, work_dir) if is_wds_url(text) else _local_shards(Path(text))
    root, containers, shards = _containers(shards)
    if not shards:
        root = Path(text)
    labels = LabelTable()
    rows = _rows(shards, labels)
    return SourceScan(kind="wds", root=root, rows=rows, labels=labels, containers=containers)
