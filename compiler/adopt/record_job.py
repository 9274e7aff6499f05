"""Indexing one TFRecord file: its records read once (`scan_records`), each Example parsed,
its features mapped to the schema's fields by the source's layout (`sources.tfrecord.layout`),
checked (`sample_check`), and the kept ones' values located in the file.

Only bytes values are stored in place: a field fed by an int64 or float list cannot be (its
member bytes would have to be written), but for the label, whose index entry is its varint
(formats/SPEC.md section 4.2). A sample's key is its `fastpack/key` value, else
`<shard name>#<record number>` (counted from 0); its source is `<shard name>#<key>`, or that
key itself where it names the shard already. A rejected record is listed as
`<shard name>#<record number>`: its key may be what could not be read.
"""

from __future__ import annotations

from typing import BinaryIO

from fastpack.formats import ShardFormatError
from fastpack.formats.example import Feature, decode_varint, parse_example
from fastpack.formats.tfrecord import KEY_FEATURE

from .indexer import ShardIndexer
from .job import JobSettings, ShardSource
from .scan_records import Record, RecordFault, file_records, label_span
from .shard_rows import Located, ShardRows

_USE_BUILD = "`fastpack index` stores bytes values in place only: use `fastpack build`"


class _RecordIndexer(ShardIndexer):
    def __init__(self, source: ShardSource, settings: JobSettings) -> None:
        if settings.records is None:
            raise ValueError("a record job needs a record layout")
        text_labels = settings.records.text_labels and settings.classes is None
        super().__init__(source, settings, text_labels)
        self.layout = settings.records

    def _scan(self, stream: BinaryIO) -> None:
        for found in file_records(stream):
            self.rows.inputs += 1
            if isinstance(found, RecordFault):
                self._fault(found)
                if found.final:
                    break
                continue
            self._record(found)

    def _path(self, number: int) -> str:
        return f"{self.source.name}#{number}"

    def _fault(self, fault: RecordFault) -> None:
        reason = f"record at byte {fault.offset}: {fault.reason}"
        if fault.final:
            reason += "; the rest of the shard is left out"
            self.rows.notes.append(f"{self.source.url}: {reason}")
        self.rows.reject(self._path(fault.number), None, reason)

    def _record(self, record: Record) -> None:
        path = self._path(record.number)
        try:
            features = parse_example(record.data)
        except ShardFormatError as e:
            self.rows.reject(path, None, f"not a tf.train.Example: {e}")
            return
        found = self._members(path, record, features)
        if found is None:
            return
        members, label = found
        refused = self.checker.reject({f: m.data for f, m in members.items()})
        if refused is not None:
            self.rows.reject(path, refused.field, refused.reason)
            return
        key = self._key(record, features)
        source = path if key is None else f"{self.source.name}#{key}"
        self.rows.add(key or path, source, label, members, f"{record.offset} {record.size}")

    def _key(self, record: Record, features: dict[str, Feature]) -> str | None:
        key = features.get(KEY_FEATURE)
        if key is None or key.kind != "bytes" or len(key.spans) != 1:
            return None
        offset, size = key.spans[0]
        return record.data[offset : offset + size].decode("utf-8", "replace")

    def _bytes(
        self, path: str, field: str, name: str, record: Record, feature: Feature
    ) -> Located | None:
        if feature.kind != "bytes" or len(feature.spans) != 1:
            count = len(feature.spans) if feature.kind == "bytes" else len(feature.numbers)
            reason = (
                f"feature {name!r} holds {count} {feature.kind} values, expected one bytes value"
            )
            if feature.kind != "bytes":
                reason += f"; {_USE_BUILD}"
            self.rows.reject(path, None if field == self.schema.image_field else field, reason)
            return None
        offset, size = feature.spans[0]
        return Located(record.data_offset + offset, record.data[offset : offset + size])

    def _members(
        self, path: str, record: Record, features: dict[str, Feature]
    ) -> tuple[dict[str, Located], int] | None:
        """Each present field's value, and the label; None when the record is rejected."""
        members: dict[str, Located] = {}
        image_field, layout = self.schema.image_field, self.layout
        if image_field is not None and layout.image is not None:
            feature = features.get(layout.image)
            if feature is None:
                self.rows.reject(path, None, f"no {layout.image!r} feature (the image)")
                return None
            found = self._bytes(path, image_field, layout.image, record, feature)
            if found is None:
                return None
            members[image_field] = found
        for source in layout.fields:
            feature = features.get(source.feature)
            if feature is None:
                continue
            found = self._bytes(path, source.spec.name, source.feature, record, feature)
            if found is None:
                return None
            members[source.spec.name] = found
        label = self._label(path, record, features, members)
        return None if label is None else (members, label)

    def _label(
        self,
        path: str,
        record: Record,
        features: dict[str, Feature],
        members: dict[str, Located],
    ) -> int | None:
        """The sample's label (-1: the schema has none), its member added to `members`; None
        when the record is rejected for it."""
        field, name = self.schema.label_field, self.layout.label
        if field is None or name is None:
            return -1
        feature = features.get(name)
        if feature is None:
            self.rows.reject(path, field, f"no {name!r} feature (the label)")
            return None
        if self.layout.text_labels:
            found = self._bytes(path, field, name, record, feature)
            if found is None:
                return None
            members[field] = found
            return self._text_label(path, field, name, found.data)
        return self._int_label(path, record, feature, members)

    def _int_label(
        self, path: str, record: Record, feature: Feature, members: dict[str, Located]
    ) -> int | None:
        field, name = self.schema.label_field or "", self.layout.label or ""
        span = label_span(record.data, name) if feature.kind == "int64" else None
        if span is None:
            self.rows.reject(path, field, f"feature {name!r} (the label) is not one int64 value")
            return None
        offset, size = span
        data = record.data[offset : offset + size]
        members[field] = Located(record.data_offset + offset, data)
        value = decode_varint(data)
        classes = self.settings.classes
        if classes is not None and not 0 <= value < len(classes):
            reason = f"label {value} is outside the {len(classes)} classes of --classes"
            self.rows.reject(path, field, reason)
            return None
        return value

    def _text_label(self, path: str, field: str, name: str, data: bytes) -> int | None:
        text = data.decode("utf-8", "replace").strip()
        if not text:
            self.rows.reject(path, field, f"feature {name!r} (the label) is blank")
            return None
        return self._class_label(path, field, text)


def index_records(source: ShardSource, settings: JobSettings) -> ShardRows:
    """The rows of the TFRecord file `source`."""
    return _RecordIndexer(source, settings).run()
