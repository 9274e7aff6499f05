"""webdataset sources: a directory of `*.tar` (in name order), one `.tar`, or webdataset URLs.

URLs are what `webdataset.WebDataset` takes (see `sources.urls`): brace patterns
(`shards-{000000..000099}.tar`), `pipe:` commands and remote URLs (`s3://`, `http://`, ...),
expanded by webdataset in its order. Members group into samples by webdataset's rule
(`webdataset.tariterators`: `base_plus_ext` splits a name at the first dot of its base name into
key and extension, consecutive members with one key are a sample, extensions are lower-cased, and
`__name__` metadata members are skipped); a sample whose key is such a `__name__` (as for
`__meta__.json`) is metadata too and skipped.

Every member of a sample is kept, typed by its extension as webdataset's decoders read it
(`formats.type_of_extension`: `.npy` an ndarray of any dtype and shape, `.txt` text, `.json`
JSON, an unknown extension raw bytes). The image is its `jpg`, `jpeg`, `png` or `webp` member,
the label the text of its label member (`cls`; numbered by a `LabelTable`), and every other
member a field whose value is a `MemberRef` to its data in the tar (`wds.fields`). Which fields:

- With a schema (`SourceOptions.schema`), a field takes the member of its name (a zstd field
  `x.zst` takes the member `x`, which its shard job compresses); the image field takes the member
  of its name, else the first of jpg, jpeg, png, webp that no other field takes. Members no field
  takes are left out (`"unnamed": "drop"`) or kept as raw fields (`"raw"`, the default), found as
  without a schema.
- Without one, the fields are those of the first shard's samples (of the first shard that has
  any; its first 10,000): the image `jpg`, the label `cls` if any of them has one (else the first
  class-typed extension, `id` or `index` say, else none: an unlabeled dataset, every label -1),
  then every other extension, sorted. A field every surveyed sample has is required (a later
  sample without it is rejected by its shard job); one only some have is optional. The survey
  reads those samples' headers once more before the scan (a local tar: seeks over the data). A
  schema of image and label only (classification tars) gives rows without field bytes, as
  version 1 did.

A member that cannot be a field is left out, with one `LeftOutWarning` per extension: one whose
extension first appears after the survey (a schema file naming it keeps it), and one whose
extension is not a field name (characters other than `a-z 0-9 _` in dot-separated parts, or a
`.zst` ending: compressed members are not passed through). A sample without its label member,
when the schema has a label field, or with an empty one, is a SourceError.

Shard jobs read images by offset from local files: a local tar in place, and a remote one from a
copy in the build directory (`<out>/.fastpack-build/sources/NNNNNN.tar`, NNNNNN its position in
the shard list), written once, streaming, while the shard is scanned (a first shard that is
surveyed: when the scan opens). Such a source therefore takes its size in local disk during the
build; the build directory is deleted when the build ends, and a resumed build reuses the copies
that are complete.
"""

from __future__ import annotations

import io
import os
import re
import tarfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ...errors import SourceError
from ..labels import LabelTable
from ..scan import PlanRow, SourceOptions, SourceScan
from ..urls import (
    COPIES_DIR,
    Read,
    expand,
    is_local,
    is_wds_url,
    local_path,
    open_remote,
    shard_name,
)
from .fields import LABEL_MEMBER, RowMaker, Sample, Survey, layout_for

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

SURVEY_SAMPLES = 10_000
_BLOCK = 512
_STREAM_BUFFER = 1 << 20
# tarfile's stream reads copy what is left of their buffer each time: larger makes small members
# slow, smaller makes more calls.
_TAR_BUFFER = 64 << 10
# webdataset.tariterators.tar_file_iterator's default `skip_meta`: metadata members it skips.
_SKIP_META = re.compile(r"__[^/]*__($|/)")
_META_KEY = re.compile(r"(^|/)__[^/]*__$")

SplitName = Callable[[str], tuple[str | None, str | None]]


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


def samples(
    tar: tarfile.TarFile,
    url: str,
    split: SplitName | None = None,
    label: str | None = LABEL_MEMBER,
) -> Iterator[Sample]:
    """The samples of `tar` (named `url` in errors) as webdataset's `group_by_keys` forms them,
    names split by `split` (default: webdataset's `base_plus_ext`); the data of a `label` member
    is read as it passes (a streamed tar cannot go back). SourceError for a sample with two
    members of one extension."""
    if split is None:
        from webdataset.tariterators import base_plus_ext  # noqa: PLC0415 -- on use: webdataset imports torch

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
        if ext == label:
            data = tar.extractfile(info)
            sample.label = data.read() if data else b""
    if sample is not None and not _META_KEY.search(sample.key):
        yield sample


def _tar_samples(
    tar: tarfile.TarFile, shard: _Shard, label: str | None, check_end: Callable[[int], None]
) -> Iterator[Sample]:
    """The samples of one tar. `check_end` gets the offset where its members end before the last
    sample is yielded: a damaged tar is reported as such, not as a sample missing members."""
    last: Sample | None = None
    for sample in samples(tar, shard.url, label=label):
        if last is not None:
            yield last
        last = sample
    check_end(tar.offset)
    if last is not None:
        yield last


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


def _local_samples(shard: _Shard, label: str | None) -> Iterator[Sample]:
    """A local tar, read in place: headers only, seeking over member data."""
    try:
        with shard.path.open("rb") as file, tarfile.open(fileobj=file, mode="r:") as tar:
            fd = file.fileno()
            size = os.fstat(fd).st_size
            for sample in _tar_samples(
                tar, shard, label, lambda end: _check_end(fd, end, shard.url)
            ):
                if any(m.offset_data + m.size > size for m in sample.members.values()):
                    raise SourceError(f"{shard.url}: cut off at byte {size}")
                yield sample
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


def _copied_samples(shard: _Shard, label: str | None) -> Iterator[Sample]:
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
                yield from _tar_samples(tar, shard, label, check_end)
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


def _shard_samples(shard: _Shard, label: str | None) -> Iterator[Sample]:
    """The samples of one shard: a remote one copied as it streams, unless its copy is whole."""
    if shard.remote and not shard.path.exists():
        shard.path.parent.mkdir(parents=True, exist_ok=True)
        return _copied_samples(shard, label)
    return _local_samples(shard, label)


def _survey(shards: list[_Shard], images: tuple[str, ...]) -> Survey:
    """The member extensions of the first shard with samples (its first `SURVEY_SAMPLES`), the
    image (the first of `images` present) aside. A remote shard is copied whole meanwhile."""
    for shard in shards:
        copying = shard.remote and not shard.path.exists()
        count, found = 0, Counter[str]()
        for sample in _shard_samples(shard, label=None):
            if count == SURVEY_SAMPLES:
                if copying:
                    continue  # the copy goes on to its end
                break
            image = next((e for e in images if e in sample.members), None)
            found.update(e for e in sample.members if e != image)
            count += 1
        if count:
            return Survey(count, found)
    return Survey()


def _rows(shards: list[_Shard], maker: RowMaker) -> Iterator[PlanRow]:
    label = maker.layout.label
    for container, shard in enumerate(shards):
        for sample in _shard_samples(shard, label):
            yield maker.row(shard.url, shard.name, container, sample)


def scan_wds(
    source: str | os.PathLike[str],
    work_dir: Path | None = None,
    options: SourceOptions | None = None,
) -> SourceScan:
    """Open a webdataset source; remote shards are copied under `work_dir/sources/`. Without a
    schema in `options`, or with one that keeps unnamed members, the first shard's samples are
    surveyed first (see the module's docstring)."""
    text = os.fspath(source)
    shards = _url_shards(text, work_dir) if is_wds_url(text) else _local_shards(Path(text))
    root, containers, shards = _containers(shards)
    if not shards:
        root = Path(text)
    layout, schema = layout_for(
        options.schema if options is not None else None,
        lambda images: _survey(shards, images),
    )
    labels = LabelTable() if layout.label is not None else None
    return SourceScan(
        kind="wds",
        root=root,
        rows=_rows(shards, RowMaker(layout, labels)),
        labels=labels,
        containers=containers,
        schema=schema,
    )


class WdsSource:
    """webdataset tars: a `.tar`, a directory of them, or webdataset URLs."""

    kind = "wds"
    description = (
        "webdataset tars (a .tar, a directory of them, or URLs: shards-{000000..000099}.tar, "
        "pipe:CMD, s3://..., https://...; with --format wds, any URL)"
    )
    suffixes = (".tar",)
    directory_files: str | None = ".tar"
    file_only = False
    shard_urls = True
    member_images = True

    def names_file(self, name: str) -> bool:
        return False

    def open(self, source: str, work_dir: Path | None, options: SourceOptions | None) -> SourceScan:
        return scan_wds(source, work_dir, options)


WDS = WdsSource()
