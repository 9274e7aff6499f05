"""Where a plan continues a dataset (an append): the plan position of its first input, the
dataset's key width, and its classes, which the plan's class names extend."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from fastpack.formats import Schema, Zstd
from fastpack.formats.layout import sample_key

from ..errors import SourceError

_SHOWN = 5  # class names an error quotes


def _names(classes: tuple[str, ...]) -> str:
    more = ", ..." if len(classes) > _SHOWN else ""
    return f"{len(classes)} classes: {', '.join(classes[:_SHOWN])}{more}"


@dataclass(frozen=True, kw_only=True)
class PlanBase:
    """The dataset a plan continues: its next plan position (`key_base`: the inputs of every
    build and append so far), its `key_width`, its `classes`, in label order, and its
    `schema`, which the plan's must be."""

    key_base: int
    key_width: int
    classes: tuple[str, ...]
    schema: Schema

    def check_schema(self, source: str, found: Schema) -> None:
        """SourceError where the source's fields are not the dataset's (compressed fields
        compared without their dictionaries, which a plan does not have)."""
        expected = without_dictionaries(self.schema)
        if found != expected:
            raise SourceError(
                f"{source}: its samples have the fields {found.to_json()}, the dataset's are "
                f"{expected.to_json()}; append a source of the dataset's fields"
            )

    def check_keys(self, source: str, inputs: int) -> None:
        """SourceError where `inputs` more plan positions would need keys wider than the
        dataset's."""
        last = sample_key(self.key_base + inputs - 1, self.key_width)
        if len(last) > self.key_width:
            raise SourceError(
                f"{source}: {inputs:,} inputs after the dataset's {self.key_base:,} would take "
                f"keys up to {last}, wider than the dataset's key_width of {self.key_width} "
                "digits; build a new dataset from all the inputs instead"
            )


def without_dictionaries(schema: Schema) -> Schema:
    """`schema` as a plan has it: compressed fields without their trained dictionaries."""
    return Schema(
        tuple(
            dataclasses.replace(spec, zstd=Zstd(level=spec.zstd.level))
            if spec.zstd is not None
            else spec
            for spec in schema.fields
        )
    )


def extend_classes(
    source: str, base: tuple[str, ...], found: tuple[str, ...], labelled: bool
) -> tuple[tuple[str, ...], npt.NDArray[np.int64] | None]:
    """`(classes, lookup)`: the dataset's `base` classes, then the names of `found` (the
    source's classes, in its label order) not among them, in that order; and the new label
    of each of the source's labels (None where they stay as they are: bare integers, or no
    labels). Earlier labels keep their meaning. `labelled`: whether the source's samples have
    labels at all. SourceError where one side names classes and the other has bare integer
    labels."""
    if not found:
        if base and labelled:
            raise SourceError(
                f"{source}: its labels are bare integers, the dataset's are class names "
                f"({_names(base)}); append a source whose labels are class names"
            )
        return base, None
    if not base and labelled:
        raise SourceError(
            f"{source}: its labels are class names ({_names(found)}), the dataset's are bare "
            "integers; append a source with integer labels"
        )
    position = {name: i for i, name in enumerate(base)}
    added = [name for name in found if name not in position]
    position.update({name: len(base) + i for i, name in enumerate(added)})
    lookup = np.array([position[name] for name in found], dtype="<i8")
    return (*base, *added), lookup
