"""The TFRecord files of a source, and reading one a large chunk at a time (see `tfrecord`).

A file is a TFRecord file by its name (case-insensitive): `*.tfrecord`, `*.tfrecords`, or
TensorFlow's sharded names with `tfrecord` in them, `train.tfrecord-00000-of-01024`. A source is
a file, a directory (its files named so, in name order; subdirectories and hidden files are not
searched), a glob (`data/train-*.tfrecord`: the regular files it matches, in path order; `**`
crosses directories), or webdataset URLs (`sources.urls`: brace patterns, `::` lists, `file:` and
`pipe:` URLs, `s3://`, `http(s)://`, ...; a glob in a remote URL is refused).
A remote file is copied whole into the build directory (`<out>/.fastpack-build/sources/NNNNNN
.tfrecord`, NNNNNN its position in the list), then read like a local one.
"""

from __future__ import annotations

import glob
import os
import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from urllib.parse import urlparse

from fastpack.formats.tfrecord import RecordProblem, RecordSpan, scan_records

from ...errors import SourceError
from ..urls import (
    COPIES_DIR,
    expand,
    is_local,
    is_wds_url,
    local_path,
    open_remote,
    scheme,
    shard_name,
)

TFRECORD_SUFFIXES = (".tfrecord", ".tfrecords")
CHUNK_BYTES = 64 << 20  # read at a time; a record larger than this is read whole
_COPY_BYTES = 8 << 20
_SHARDED = re.compile(r"[^/]*tfrecord[^/]*-[0-9]+-of-[0-9]+")
_GLOB_MARKS = re.compile(r"[*?[]")

Item = RecordSpan | RecordProblem


def is_tfrecord_name(name: str) -> bool:
    """Whether a file name (or a URL's path) names a TFRecord file."""
    base = name.rstrip("/").rpartition("/")[2].lower()
    return base.endswith(TFRECORD_SUFFIXES) or _SHARDED.fullmatch(base) is not None


def names_tfrecord(url: str) -> bool:
    """Whether a URL's path (or a word of a `pipe:` command) names a TFRecord file."""
    if scheme(url) == "pipe":
        return any(is_tfrecord_name(urlparse(word).path) for word in url[5:].split())
    return is_tfrecord_name(urlparse(url).path if scheme(url) else url)


def remote_name(url: str) -> str:
    """A remote file's name in sample sources: the base name of its URL, or for a `pipe:`
    command that of its last word naming a TFRecord file (else the whole command)."""
    if scheme(url) == "pipe":
        words = [w for w in url[5:].split() if is_tfrecord_name(urlparse(w).path)]
        return shard_name(words[-1]) if words else url
    return shard_name(url)


def is_glob(source: str) -> bool:
    """A local glob: `*`, `?` or `[` in a source that is not a URL or an existing path."""
    return (
        not scheme(source)
        and _GLOB_MARKS.search(source) is not None
        and not os.path.lexists(source)
    )


def glob_files(pattern: str) -> list[str]:
    """The regular files `pattern` matches (`**` crosses directories), in path order."""
    return sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))


def directory_files(path: Path) -> list[str]:
    """The TFRecord files of a directory (hidden ones aside), in name order."""
    with os.scandir(path) as it:
        names = [
            e.name
            for e in it
            if is_tfrecord_name(e.name) and not e.name.startswith(".") and e.is_file()
        ]
    return [str(path / name) for name in sorted(names)]


@dataclass(frozen=True)
class RecordFile:
    """One TFRecord file: `url` as errors name it, `name` as sample sources name it, `path` the
    local file read by offset (the copy, for a remote one)."""

    url: str
    name: str
    path: Path
    remote: bool = False


def _local_files(source: str) -> list[RecordFile]:
    if is_glob(source):
        paths = glob_files(source)
        if not paths:
            raise SourceError(f"{source}: matches no file")
    elif os.path.isdir(source):
        paths = directory_files(Path(source))
        if not paths:
            raise SourceError(
                f"{source}: holds no TFRecord files (named *.tfrecord, *.tfrecords or "
                "*tfrecord*-NNNNN-of-NNNNN); for other names give a glob such as "
                f"{os.path.join(source, 'train-*')} with the tfrecord format"
            )
    else:
        paths = [source]
    return [RecordFile(p, "", Path(os.path.abspath(p))) for p in paths]


def _url_files(source: str, work_dir: Path | None) -> list[RecordFile]:
    files = []
    for number, url in enumerate(expand(source)):
        if is_local(url):
            files.append(RecordFile(url, "", Path(os.path.abspath(local_path(url)))))
            continue
        if work_dir is None:
            raise SourceError(f"{url}: a remote file needs a build directory to be copied to")
        copy = work_dir / COPIES_DIR / f"{number:06d}.tfrecord"
        files.append(RecordFile(url, remote_name(url), copy, remote=True))
    return files


def record_files(source: str, work_dir: Path | None) -> tuple[Path, list[RecordFile]]:
    """The files of `source` and their common directory, which local files are named from."""
    files = _url_files(source, work_dir) if is_wds_url(source) else _local_files(source)
    parents = sorted({os.path.dirname(f.path) for f in files})
    root = Path(os.path.commonpath(parents)) if parents else Path(source)
    named = [
        f if f.remote else RecordFile(f.url, os.path.relpath(f.path, root), f.path) for f in files
    ]
    return root, named


def fetch(file: RecordFile) -> None:
    """Copy a remote file into its local path, unless a whole copy is there already."""
    if not file.remote or file.path.exists():
        return
    file.path.parent.mkdir(parents=True, exist_ok=True)
    part = file.path.with_name(file.path.name + ".part")
    with open_remote(file.url) as read, part.open("wb") as copy:
        while chunk := read(_COPY_BYTES):
            copy.write(chunk)
        copy.flush()
        os.fsync(copy.fileno())
    os.replace(part, file.path)


def _chunks(stream: BinaryIO, size: int, chunk_bytes: int) -> Iterator[tuple[bytes, int, Item]]:
    """`(chunk, its offset in the file, record)` for every record: a record that runs past a
    chunk starts the next one (a larger one when it alone fills a chunk)."""
    base, want = 0, chunk_bytes
    while base < size:
        stream.seek(base)
        data = stream.read(want)
        if not data:
            return  # the file shrank while it was read
        at_end = base + len(data) >= size
        step, want = len(data), chunk_bytes
        for item in scan_records(data):
            if isinstance(item, RecordProblem) and not item.resumable:
                if not at_end and item.truncated:  # cut by the chunk
                    step = item.offset
                    want = chunk_bytes if item.offset else 2 * len(data)
                    break
                yield data, base, item
                return
            yield data, base, item
        base += step


def file_records(
    file: RecordFile, chunk_bytes: int = CHUNK_BYTES
) -> Generator[tuple[bytes, int, Item], None, None]:
    """Every record of `file` with both CRCs checked (`scan_records`), as `(chunk, offset of the
    chunk in the file, span or problem)`; reading stops after a problem that leaves the rest of
    the file unreadable. SourceError naming the file when it cannot be read."""
    fetch(file)
    try:
        with file.path.open("rb") as stream:
            yield from _chunks(stream, os.fstat(stream.fileno()).st_size, chunk_bytes)
    except FileNotFoundError as e:
        raise SourceError(f"{file.url}: not found") from e
    except IsADirectoryError as e:
        raise SourceError(f"{file.url}: a directory, expected a TFRecord file") from e
    except OSError as e:
        raise SourceError(f"{file.url}: cannot read: {e.strerror or e}") from e
