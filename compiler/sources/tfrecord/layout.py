"""Which features of a `tf.train.Example` feed which fields of the dataset (see `tfrecord`).

A `Layout` names the feature of the image, of the label and of every other field; `layout_for`
makes it from the build's schema, or from a `Survey` of the first records. `field_value` turns a
parsed feature into what the shard jobs get: a `MemberRef` to a bytes value inside the file, or
the numbers of an int64 or float list, inline.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from fastpack.formats import FieldSpec, Schema
from fastpack.formats.example import Feature, Kind
from fastpack.formats.schema import ZSTD_SUFFIX, type_of_extension
from fastpack.formats.tfrecord import (
    FIELD_PREFIX,
    FORMAT_FEATURE,
    HEIGHT_FEATURE,
    IMAGE_FEATURE,
    KEY_FEATURE,
    LABEL_FEATURE,
    WIDTH_FEATURE,
)

from ...build_schema import BuildSchema
from ...errors import SourceError
from ..sample_fields import FieldValue, InvalidValue, MemberRef
from ..urls import name_problem

IMAGE_FIELD, PNG_FIELD, LABEL_FIELD = "jpg", "png", "cls"
# features that describe the image and the record, left out without a word
QUIET_FEATURES = frozenset(
    {
        FORMAT_FEATURE,
        HEIGHT_FEATURE,
        WIDTH_FEATURE,
        KEY_FEATURE,
        "image/channels",
        "image/colorspace",
    }
)
# what each kind of feature can fill; a bytes feature fills anything (one value)
_NUMBER_TYPES: dict[Kind, tuple[str, ...]] = {
    "int64": ("class", "class_ids", "ndarray", "json"),
    "float": ("ndarray", "json"),
}


@dataclass
class Survey:
    """The records looked at before the scan: how many, how many have each feature, each
    feature's kind (as first seen), and the `image/format` of the first with an image."""

    records: int = 0
    features: Counter[str] = field(default_factory=Counter)
    kinds: dict[str, Kind] = field(default_factory=dict)
    image_format: bytes = b""

    def add(self, data: bytes, features: dict[str, Feature]) -> None:
        self.records += 1
        self.features.update(features.keys())
        for name, feature in features.items():
            self.kinds.setdefault(name, feature.kind)
        fmt = features.get(FORMAT_FEATURE)
        if not self.image_format and IMAGE_FEATURE in features and fmt and fmt.spans:
            offset, size = fmt.spans[0]
            self.image_format = data[offset : offset + size].strip().lower()


@dataclass(frozen=True)
class Source:
    """A field other than the row's image and label, and the feature that feeds it."""

    spec: FieldSpec
    feature: str


@dataclass(frozen=True)
class Layout:
    """The feature of the row's image (None: the schema has no jpeg field; the row is sized by
    its record), of the label (None: no label field; `text_labels`: a bytes feature, numbered by
    a LabelTable) and of each other field, and the dataset's schema. Other features are left
    out, with a warning unless `drop_unnamed` (or among QUIET_FEATURES)."""

    image: str | None
    label: str | None
    text_labels: bool
    fields: tuple[Source, ...]
    schema: Schema
    drop_unnamed: bool = False

    @property
    def used(self) -> frozenset[str]:
        taken = {self.image, self.label, *(s.feature for s in self.fields)}
        return frozenset(f for f in taken if f is not None)


def _fastpack_fields(survey: Survey, taken: set[str]) -> list[FieldSpec]:
    """A field per `fastpack/<name>` feature that can be one and is not `taken`, sorted: typed
    by its extension, optional unless every surveyed record has it."""
    specs = []
    for feature in sorted(survey.features):
        if not feature.startswith(FIELD_PREFIX) or feature == KEY_FEATURE:
            continue
        name = feature.removeprefix(FIELD_PREFIX)
        if name_problem(name) is not None or name in taken:
            continue
        optional = survey.features[feature] < survey.records
        specs.append(FieldSpec(name=name, type=type_of_extension(name), optional=optional))
    return specs


def _inferred(survey: Survey) -> Layout:
    """TensorFlow's layout: the image (`jpg`, or `png` when `image/format` says so), the label
    `cls` when some surveyed record has one, then the `fastpack/<name>` fields, sorted."""
    png = survey.image_format == b"png"
    image = FieldSpec(name=PNG_FIELD if png else IMAGE_FIELD, type="png" if png else "jpeg")
    specs = [image]
    label = LABEL_FEATURE if survey.features[LABEL_FEATURE] or not survey.records else None
    if label is not None:
        specs.append(FieldSpec(name=LABEL_FIELD, type="class"))
    extra = _fastpack_fields(survey, {s.name for s in specs})
    fields = [Source(s, FIELD_PREFIX + s.name) for s in extra]
    if png:
        fields.insert(0, Source(image, IMAGE_FEATURE))
    text = label is not None and survey.kinds.get(label) == "bytes"
    schema = Schema((*specs, *extra))
    return Layout(None if png else IMAGE_FEATURE, label, text, tuple(fields), schema)


def _feature_of(spec: FieldSpec, column: str, default: str, survey: Survey) -> str:
    """A field's feature: its column, unless the survey saw none of that name but saw the
    field's default feature (the image's, the label's, or `fastpack/<name>`). SourceError when
    the first records hold it as a list of numbers that the field cannot hold."""
    feature = default if column not in survey.features and default in survey.features else column
    kind = survey.kinds.get(feature)
    if kind is not None and kind != "bytes" and spec.type not in _NUMBER_TYPES[kind]:
        raise SourceError(
            f"schema field {spec.name!r} ({spec.type}): its feature {feature!r} holds {kind} "
            f"values in the first records, which a {spec.type} field cannot hold"
        )
    return feature


def _named(schema: BuildSchema, survey: Survey) -> Layout:
    dataset = schema.schema
    image, label = dataset.image_field, dataset.label_field
    image_feature = label_feature = None
    fields = []
    for source in schema.fields:
        spec = source.spec
        if spec.name == image:
            image_feature = _feature_of(spec, source.column, IMAGE_FEATURE, survey)
        elif spec.name == label:
            label_feature = _feature_of(spec, source.column, LABEL_FEATURE, survey)
        else:
            member = spec.name.removesuffix(ZSTD_SUFFIX) if spec.zstd else spec.name
            feature = _feature_of(spec, source.column, FIELD_PREFIX + member, survey)
            fields.append(Source(spec, feature))
    text = label_feature is not None and survey.kinds.get(label_feature) == "bytes"
    drop = schema.unnamed == "drop"
    return Layout(image_feature, label_feature, text, tuple(fields), dataset, drop)


def layout_for(schema: BuildSchema | None, survey: Survey) -> Layout:
    """The layout of the build's `schema`, or without one TensorFlow's (see `_inferred`)."""
    return _inferred(survey) if schema is None else _named(schema, survey)


def _numbers(name: str, feature: Feature, spec: FieldSpec) -> FieldValue:
    """An int64 or float list as a field's inline value: one int for a class, a list otherwise,
    nested by the spec's shape when its dimensions past the first are fixed."""
    numbers = list(feature.numbers)
    if spec.type == "class":
        if len(numbers) != 1:
            return InvalidValue(f"feature {name!r} holds {len(numbers)} values, a class takes one")
        return numbers[0]
    shape = spec.shape
    if spec.type == "ndarray" and shape and len(shape) > 1 and None not in shape[1:]:
        dims = [d for d in shape[1:] if d is not None]
        inner = int(np.prod(dims))
        if not numbers:
            return numbers  # no rows: the codec gives the empty array its shape
        if inner == 0 or len(numbers) % inner:
            return InvalidValue(
                f"feature {name!r}: {len(numbers)} values do not fill an array of shape {shape}"
            )
        return np.array(numbers).reshape(-1, *dims).tolist()
    return numbers


def field_value(
    name: str, feature: Feature, spec: FieldSpec, container: int, base: int
) -> FieldValue:
    """The value of `spec` fed by the feature `name` of a record whose chunk starts at byte
    `base` of container `container`: a bytes value as a reference into the file, numbers
    inline; an InvalidValue for a feature of the wrong kind or number of values."""
    if feature.kind == "bytes":
        if len(feature.spans) != 1:
            count = len(feature.spans)
            return InvalidValue(
                f"feature {name!r} holds {count} bytes values, a {spec.type} field takes one"
            )
        offset, size = feature.spans[0]
        return MemberRef(container, base + offset, size)
    if spec.type not in _NUMBER_TYPES[feature.kind]:
        return InvalidValue(
            f"feature {name!r} holds {feature.kind} values, which a {spec.type} field cannot hold"
        )
    return _numbers(name, feature, spec)
