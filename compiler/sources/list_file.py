"""List-file sources: CSV, TSV or JSONL with a path (relative to the list file) and a label."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from ..errors import SourceError
from .labels import LabelTable
from .scan import PlanRow, SourceScan

LIST_SUFFIXES = (".csv", ".tsv", ".jsonl")
_HEADER = ["path", "label"]

Entry = tuple[int, str, str]  # (line number, path, label)


def _delimited(file: TextIO, name: str, delimiter: str) -> Iterator[Entry]:
    reader = csv.reader(file, delimiter=delimiter)
    first = True
    try:
        for row in reader:
            if not row:
                continue
            if first:
                first = False
                if [c.strip().lower() for c in row] == _HEADER:
                    continue
            if len(row) != 2:
                raise SourceError(
                    f"{name}:{reader.line_num}: expected 2 columns (path, label), "
                    f"found {len(row)}: {row!r}"
                )
            yield reader.line_num, row[0], row[1]
    except csv.Error as e:
        raise SourceError(f"{name}:{reader.line_num}: malformed line ({e})") from e


def _json_lines(file: TextIO, name: str) -> Iterator[Entry]:
    for number, line in enumerate(file, start=1):
        if not line.strip():
            continue
        try:
            item: Any = json.loads(line)
        except json.JSONDecodeError as e:
            raise SourceError(f"{name}:{number}: not valid JSON ({e.msg})") from e
        label = item.get("label") if isinstance(item, dict) else None
        if not (
            isinstance(item, dict)
            and isinstance(item.get("path"), str)
            and isinstance(label, (str, int))
            and not isinstance(label, bool)
        ):
            raise SourceError(
                f"{name}:{number}: expected an object with a string 'path' and an integer or "
                f"string 'label', found {line.strip()[:200]}"
            )
        yield number, item["path"], str(label)


def _entries(file: TextIO, path: Path) -> Iterator[Entry]:
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _json_lines(file, str(path))
    return _delimited(file, str(path), "\t" if suffix == ".tsv" else ",")


def _rows(path: Path, labels: LabelTable) -> Iterator[PlanRow]:
    root = str(path.parent)
    number = 0
    try:
        with path.open(encoding="utf-8", newline="") as file:
            for number, raw_image, raw_label in _entries(file, path):
                image, label = raw_image.strip(), raw_label.strip()
                if not image or not label:
                    raise SourceError(f"{path}:{number}: empty {'path' if not image else 'label'}")
                try:
                    size = os.stat(os.path.join(root, image)).st_size
                except OSError:  # kept: rejected when its shard job cannot read it
                    size = 0
                yield PlanRow(os.fsencode(image), labels.id(label), size)
    except UnicodeDecodeError as e:
        raise SourceError(f"{path}: not UTF-8 text after line {number} ({e.reason})") from e


def scan_list(path: Path) -> SourceScan:
    """Inputs in the order of the file's lines; blank lines and a `path,label` header skipped."""
    if path.suffix.lower() not in LIST_SUFFIXES:
        raise SourceError(f"{path}: a list file must end in {', '.join(LIST_SUFFIXES)}")
    labels = LabelTable()
    return SourceScan(kind="list", root=path.parent, rows=_rows(path, labels), labels=labels)
