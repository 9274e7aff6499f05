"""webdataset sources: a directory of `*.tar` (in name order) or one `.tar`.

Consecutive members sharing a key (the name up to the first dot of its base name) form a sample;
its image is the `jpg`, `jpeg`, `png` or `webp` member and its label the text of its `cls` member.
"""

from __future__ import annotations

import os
import tarfile
from collections.abc import Iterator
from pathlib import Path

from ..errors import SourceError
from .labels import LabelTable
from .scan import PlanRow, SourceScan

IMAGE_MEMBERS = ("jpg", "jpeg", "png", "webp")
Sample = tuple[str, dict[str, tarfile.TarInfo]]


def _split(name: str) -> tuple[str, str] | None:
    """`(key, extension)` webdataset-style, or None for members a sample cannot hold."""
    directory, _, base = name.rpartition("/")
    stem, dot, ext = base.partition(".")
    if not dot or not stem or base.startswith("__"):
        return None
    return (f"{directory}/{stem}" if directory else stem), ext.lower()


def _members(tar: tarfile.TarFile) -> Iterator[tarfile.TarInfo]:
    while (info := tar.next()) is not None:
        tar.members = []  # type: ignore[attr-defined]  # tarfile keeps every header it reads; a tar may hold millions
        if info.isreg():
            yield info


def _samples(tar: tarfile.TarFile, name: str) -> Iterator[Sample]:
    key, members = "", dict[str, tarfile.TarInfo]()
    for info in _members(tar):
        split = _split(info.name)
        if split is None:
            continue
        if split[0] != key and members:
            yield key, members
            members = {}
        key = split[0]
        if split[1] in members:
            raise SourceError(f"{name}: sample {key!r} has two {split[1]!r} members")
        members[split[1]] = info
    if members:
        yield key, members


def _row(
    tar: tarfile.TarFile, path: Path, container: int, sample: Sample, labels: LabelTable
) -> PlanRow:
    key, members = sample
    image = next((members[e] for e in IMAGE_MEMBERS if e in members), None)
    if image is None or "cls" not in members:
        missing = f"image member ({', '.join(IMAGE_MEMBERS)})" if image is None else "cls member"
        raise SourceError(f"{path}: sample {key!r} has no {missing}; members: {sorted(members)}")
    cls = tar.extractfile(members["cls"])
    text = cls.read().decode("utf-8", "replace").strip() if cls else ""
    if not text:
        raise SourceError(f"{path}: sample {key!r} has an empty cls member")
    source = f"{path.name}:{key}".encode()
    return PlanRow(source, labels.id(text), image.size, container, image.offset_data)


def _rows(root: Path, containers: tuple[str, ...], labels: LabelTable) -> Iterator[PlanRow]:
    for number, name in enumerate(containers):
        path = root / name
        size = os.path.getsize(path)
        try:
            with tarfile.open(path, mode="r:") as tar:
                for sample in _samples(tar, str(path)):
                    row = _row(tar, path, number, sample, labels)
                    if row.offset + row.size > size:
                        raise SourceError(f"{path}: sample {sample[0]!r} is cut off at byte {size}")
                    yield row
        except (tarfile.ReadError, EOFError) as e:
            raise SourceError(f"{path}: not a readable tar ({e})") from e


def scan_wds(path: Path) -> SourceScan:
    if path.is_dir():
        root = path
        with os.scandir(path) as it:
            tars = sorted(e.name for e in it if e.name.endswith(".tar") and e.is_file())
        containers = tuple(tars)
    else:
        root, containers = path.parent, (path.name,)
    labels = LabelTable()
    rows = _rows(root, containers, labels)
    return SourceScan(kind="wds", root=root, rows=rows, labels=labels, containers=containers)
