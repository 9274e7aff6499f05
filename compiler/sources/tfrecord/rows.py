"""The rows of one TFRecord file (see `tfrecord`): a function of the file and the layout alone,
so that files are scanned in worker processes, each into a `FileScan` the scan then streams."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from fastpack.formats import ShardFormatError
from fastpack.formats.example import Feature, parse_example
from fastpack.formats.tfrecord import RecordProblem, RecordSpan

from ..sample_fields import WHOLE_SAMPLE, FieldValue, InvalidValue, pack_fields
from ..scan import PlanRow
from .files import RecordFile, file_records
from .layout import QUIET_FEATURES, Layout, field_value


@dataclass
class FileScan:
    """One file's rows; with text labels, each row's label is an index into `labels` (the
    file's label texts in first-seen order); `left_out`: `(record offset, features)` where
    features that feed no field first appear."""

    rows: list[PlanRow] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    left_out: list[tuple[int, list[str]]] = field(default_factory=list)


def scan_file(layout: Layout, file: RecordFile, container: int) -> FileScan:
    """The rows of `file`, container `container` of the scan, read by `layout`."""
    return _FileRows(layout, file, container).scan()


class _FileRows:
    def __init__(self, layout: Layout, file: RecordFile, container: int) -> None:
        self.layout, self.file, self.container = layout, file, container
        self.out = FileScan()
        self._label_ids: dict[str, int] = {}
        self._known = set(layout.used | QUIET_FEATURES)  # features taken or already reported

    def scan(self) -> FileScan:
        rows = self.out.rows
        for data, base, item in file_records(self.file):
            if isinstance(item, RecordSpan):
                rows.append(self._row(data, base, item))
            elif item.resumable:
                rows.append(self._reject(base + item.offset, item.reason))
            else:
                rows.append(self._reject(base + item.offset, self._cut(base, item)))
        self.out.labels = list(self._label_ids)
        return self.out

    def _row(self, data: bytes, base: int, span: RecordSpan) -> PlanRow:
        at, start, layout = base + span.offset, span.data_offset, self.layout
        try:
            features = parse_example(data, start, start + span.size)
        except ShardFormatError as e:  # its byte numbers count from the chunk's start
            counted = f" (bytes counted from byte {base} of the file)" if base else ""
            return self._reject(at, f"{e}{counted}")
        offset, size = start, span.size
        if layout.image is not None:
            image = features.get(layout.image)
            if image is None or image.kind != "bytes" or len(image.spans) != 1:
                return self._reject(at, _not_one(layout.image, image, "image", "bytes"))
            offset, size = image.spans[0]
        label = -1
        if layout.label is not None:
            found = self._label(data, features.get(layout.label))
            if isinstance(found, InvalidValue):
                return self._reject(at, found.reason)
            label = found
        values: dict[str, FieldValue] = {}
        for source in layout.fields:
            feature = features.get(source.feature)
            if feature is not None:
                value = field_value(source.feature, feature, source.spec, self.container, base)
                values[source.spec.name] = value
        if not self._known.issuperset(features):
            new = sorted(features.keys() - self._known)
            self._known.update(new)
            self.out.left_out.append((at, new))
        name = os.fsencode(f"{self.file.name}:{at}")
        return PlanRow(name, label, size, self.container, base + offset, pack_fields(values))

    def _label(self, data: bytes, feature: Feature | None) -> int | InvalidValue:
        """The label: an int64's value, or the number of a bytes value's text in this file."""
        name, text_labels = self.layout.label, self.layout.text_labels
        kind = "bytes" if text_labels else "int64"
        count = len(feature.spans if text_labels else feature.numbers) if feature else 0
        if feature is None or feature.kind != kind or count != 1:
            return InvalidValue(_not_one(name, feature, "label", kind))
        if not text_labels:
            return int(feature.numbers[0])
        offset, size = feature.spans[0]
        text = data[offset : offset + size].decode("utf-8", "replace").strip()
        if not text:
            return InvalidValue(f"feature {name!r} (the label) is blank")
        return self._label_ids.setdefault(text, len(self._label_ids))

    def _reject(self, at: int, reason: str) -> PlanRow:
        """The row of a record the dataset cannot use: rejected by its shard job, with its
        reason (`WHOLE_SAMPLE`); its image is empty."""
        fields = pack_fields({WHOLE_SAMPLE: InvalidValue(reason)})
        return PlanRow(os.fsencode(f"{self.file.name}:{at}"), -1, 0, self.container, at, fields)

    def _cut(self, base: int, problem: RecordProblem) -> str:
        """Why the rest of the file is left out (in the file's offsets, not its chunk's)."""
        size = os.path.getsize(self.file.path)
        what = problem.reason
        if problem.truncated:
            what = f"truncated: the file ends at byte {size}, inside this record"
        return f"{what}; the rest of the file ({size - base - problem.offset} bytes) is left out"


def _not_one(name: str | None, feature: Feature | None, what: str, kind: str) -> str:
    """Why a record's `feature` (`name`) is not the one `kind` value of `what` it should hold."""
    if feature is None:
        return f"no {name!r} feature (the {what})"
    count = len(feature.spans) if feature.kind == "bytes" else len(feature.numbers)
    values = "value" if count == 1 else "values"
    return (
        f"feature {name!r} (the {what}) holds {count} {feature.kind} {values}, expected one "
        f"{kind} value"
    )
