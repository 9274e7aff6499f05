"""The dataset's schema and how members feed it: from `--schema`, or inferred from the first
shard's first samples as a build's webdataset or TFRecord source infers it
(`sources.wds.fields.layout_for`, `sources.tfrecord.layout.layout_for`).

With a schema, members or features that no field names are left out of the index
(`"unnamed": "drop"`). The image is always the schema's jpeg field: a record whose
`image/format` says png is indexed as jpeg, and refused for its PNG bytes. A zstd field
cannot be indexed (its members would have to be compressed).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from fastpack.formats import Schema, ShardFormatError
from fastpack.formats.example import parse_example

from ..build_schema import BuildSchema
from ..errors import SourceError
from ..sources.tfrecord.layout import Layout as RecordLayout
from ..sources.tfrecord.layout import Survey as RecordSurvey
from ..sources.tfrecord.layout import layout_for as record_layout_for
from ..sources.tfrecord.source import SURVEY_RECORDS
from ..sources.wds.fields import Layout as TarLayout
from ..sources.wds.fields import Survey as TarSurvey
from ..sources.wds.fields import layout_for as tar_layout_for
from ..sources.wds.source import SURVEY_SAMPLES
from .job import ShardSource
from .scan_records import Record, file_records
from .scan_tar import TarSample, tar_samples
from .stream import open_plain


def _no_zstd(schema: BuildSchema | None) -> BuildSchema | None:
    if schema is None:
        return None
    packed = [f.spec.name for f in schema.fields if f.spec.zstd is not None]
    if packed:
        raise SourceError(
            f"schema fields {packed} are zstd-compressed: `fastpack index` keeps members as "
            "they are; use `fastpack build` to compress them"
        )
    return dataclasses.replace(schema, unnamed="drop")


def _tar_survey(
    first: ShardSource, storage_options: Mapping[str, Any]
) -> Callable[[tuple[str, ...]], TarSurvey]:
    """The survey of `first`'s first samples, made when the layout asks for it."""

    def survey(images: tuple[str, ...]) -> TarSurvey:
        count, found = 0, Counter[str]()
        with open_plain(first.url, storage_options) as stream:
            for sample in tar_samples(stream, lambda _: False):
                if not isinstance(sample, TarSample) or count == SURVEY_SAMPLES:
                    break
                image = next((e for e in images if e in sample.members), None)
                found.update(e for e in sample.members if e != image)
                count += 1
        return TarSurvey(count, found)

    return survey


def tar_layout(
    schema: BuildSchema | None, first: ShardSource, storage_options: Mapping[str, Any]
) -> tuple[TarLayout, Schema]:
    """`(layout, the dataset's schema)` of a webdataset source: how a sample's members feed
    the schema (given, or found in `first`'s samples)."""
    layout, found = tar_layout_for(_no_zstd(schema), _tar_survey(first, storage_options))
    if found.image_field is None:
        raise SourceError("the schema has no jpeg field: an indexed sample needs its image")
    return layout, found


def record_layout(
    schema: BuildSchema | None, first: ShardSource, storage_options: Mapping[str, Any]
) -> RecordLayout:
    """How an Example's features feed the schema (given, or found in `first`'s records)."""
    survey = RecordSurvey()
    with open_plain(first.url, storage_options) as stream:
        for record in file_records(stream):
            if survey.records == SURVEY_RECORDS:
                break
            if not isinstance(record, Record):
                continue
            try:
                features = parse_example(record.data)
            except ShardFormatError:
                continue
            survey.add(record.data, features)
    survey.image_format = b""  # the image is jpeg: PNG bytes are refused sample by sample
    layout = record_layout_for(_no_zstd(schema), survey)
    if layout.image is None or layout.schema.image_field is None:
        raise SourceError("the schema has no jpeg field: an indexed sample needs its image")
    return layout
