"""Which members of a webdataset sample become which fields of the dataset (see `wds`).

A `Layout` names the sample's image candidates, its label member and the member extension behind
each other field; `layout_for` makes it from the build's schema, or finds it in a survey of the
first shard's samples. `RowMaker` turns one sample into its `PlanRow`.
"""

from __future__ import annotations

import os
import tarfile
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from fastpack.formats import FieldSpec, Schema
from fastpack.formats.schema import ZSTD_SUFFIX, type_of_extension

from ...build_schema import BuildSchema
from ...errors import SourceError
from ..labels import LabelTable
from ..left_out import warn_left_out
from ..sample_fields import MemberRef, pack_fields
from ..scan import PlanRow
from ..urls import name_problem

IMAGE_MEMBERS = ("jpg", "jpeg", "png", "webp")
IMAGE_FIELD = "jpg"
LABEL_MEMBER = "cls"


@dataclass
class Sample:
    """A sample's key, its members by (lower-case) extension, and its label member's data."""

    key: str
    members: dict[str, tarfile.TarInfo] = field(default_factory=dict)
    label: bytes | None = None


@dataclass(frozen=True)
class Survey:
    """The samples looked at before the scan (the first shard's), and how many of them have
    each member extension besides their image."""

    samples: int = 0
    extensions: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True)
class Layout:
    """How members become a row: the first of `images` present is the image, `label` the label
    member (None: the schema has no label field), `fields` maps a member extension to its field.
    Other members are left out, with a warning unless `drop_unnamed`."""

    images: tuple[str, ...]
    label: str | None
    fields: Mapping[str, str]
    drop_unnamed: bool = False


def _found_fields(survey: Survey, taken: set[str]) -> list[FieldSpec]:
    """A field per surveyed extension not in `taken` that can be one, sorted: typed by its
    extension, optional unless every surveyed sample has it."""
    return [
        FieldSpec(
            name=ext,
            type=type_of_extension(ext),
            optional=survey.extensions[ext] < survey.samples,
        )
        for ext in sorted(survey.extensions)
        if ext not in taken and name_problem(ext) is None
    ]


def _inferred(survey: Survey) -> tuple[Layout, Schema]:
    """The image `jpg`, the label `cls` (else the first class-typed extension, else none), then
    every other extension the survey found, sorted."""
    found = survey.extensions
    valid = sorted(e for e in found if name_problem(e) is None)
    label = LABEL_MEMBER if LABEL_MEMBER in found else None
    label = label or next((e for e in valid if type_of_extension(e) == "class"), None)
    specs = [FieldSpec(name=IMAGE_FIELD, type="jpeg")]
    if label is not None:
        specs.append(FieldSpec(name=label, type="class"))
    specs += _found_fields(survey, {label} if label else set())
    fields = {s.name: s.name for s in specs[1:] if s.name != label}
    return Layout(IMAGE_MEMBERS, label, fields), Schema(tuple(specs))


def _named(
    schema: BuildSchema, survey: Callable[[tuple[str, ...]], Survey]
) -> tuple[Layout, Schema]:
    """A field takes the member of its name (a zstd field `x.zst` the member `x`); the image
    field the member of its name, else the first image member no other field takes."""
    dataset = schema.schema
    image, label = dataset.image_field, dataset.label_field
    if image is None:
        raise SourceError(
            "the schema has no jpeg field: a webdataset sample's image needs one "
            f"(its jpg, jpeg, png or webp member); fields: {list(dataset.names)}"
        )
    fields: dict[str, str] = {}
    for spec in dataset.fields:
        if spec.name in (image, label):
            continue
        member = spec.name.removesuffix(ZSTD_SUFFIX) if spec.zstd is not None else spec.name
        if member in fields or member in (image, label):
            other = fields.get(member, member)
            raise SourceError(
                f"the schema's fields {other!r} and {spec.name!r} both take the {member!r} member"
            )
        fields[member] = spec.name
    images = (image, *(e for e in IMAGE_MEMBERS if e not in (image, label) and e not in fields))
    specs = list(dataset.fields)
    if schema.unnamed == "raw":
        taken = {image, *fields, *([label] if label else [])}
        for spec in _found_fields(survey(images), taken):
            specs.append(FieldSpec(name=spec.name, type="raw", optional=spec.optional))
            fields[spec.name] = spec.name
    layout = Layout(images, label, fields, drop_unnamed=schema.unnamed == "drop")
    return layout, Schema(tuple(specs))


def layout_for(
    schema: BuildSchema | None, survey: Callable[[tuple[str, ...]], Survey]
) -> tuple[Layout, Schema]:
    """The layout and the dataset's schema for the build's `schema` (its fields in its order,
    then the unnamed members kept as raw fields), or without one what `survey` (given the image
    candidates) finds (image, label, the rest); survey is called at most once, and not at all for
    a schema whose unnamed members are dropped."""
    if schema is None:
        return _inferred(survey(IMAGE_MEMBERS))
    return _named(schema, survey)


class RowMaker:
    """Makes the rows of a scan by one layout; labels through `labels` (None: no label field)."""

    def __init__(self, layout: Layout, labels: LabelTable | None) -> None:
        self.layout = layout
        self.labels = labels
        self._warned: set[str] = set()

    def row(self, url: str, name: str, container: int, sample: Sample) -> PlanRow:
        """The row of `sample` from the tar `name` (`url` in errors), container `container`."""
        layout, members = self.layout, sample.members
        image = next((e for e in layout.images if e in members), None)
        if image is None or (layout.label is not None and sample.label is None):
            missing = (
                f"image member ({', '.join(layout.images)})"
                if image is None
                else f"{layout.label} member"
            )
            raise SourceError(
                f"{url}: sample {sample.key!r} has no {missing}; members: {sorted(members)}"
            )
        label = -1
        if self.labels is not None and sample.label is not None:
            text = sample.label.decode("utf-8", "replace").strip()
            if not text:
                raise SourceError(
                    f"{url}: sample {sample.key!r} has an empty {layout.label} member"
                )
            label = self.labels.id(text)
        values: dict[str, MemberRef] = {}
        for ext, info in members.items():
            if ext in (image, layout.label):
                continue
            field_name = layout.fields.get(ext)
            if field_name is None:
                self._left_out(url, sample.key, ext)
            else:
                values[field_name] = MemberRef(container, info.offset_data, info.size)
        info = members[image]
        source = os.fsencode(f"{name}:{sample.key}")
        return PlanRow(source, label, info.size, container, info.offset_data, pack_fields(values))

    def _left_out(self, url: str, key: str, ext: str) -> None:
        if self.layout.drop_unnamed or ext in self._warned:
            return
        self._warned.add(ext)
        why = name_problem(ext) or (
            "is not among the fields found in the first shard's samples (a schema file that "
            "names it keeps it)"
        )
        warn_left_out(
            f"{url}: sample {key!r}: member {ext!r} {why}; every {ext!r} member is left out of "
            "the dataset"
        )
