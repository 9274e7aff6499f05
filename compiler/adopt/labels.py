"""A sample's label from its label member's text: a class name or an integer (see `adopt`).

With a class list (`--classes`), a name is its position in the list and an integer its own value
(which must be a position in the list); without one, a shard numbers texts in first-seen order,
and `number_labels` gives them their final values once every shard is indexed: the integers
themselves when every text is an integer, else the positions of the names in sorted order
(`compiler.sources.labels.LabelTable`, as a build numbers them).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..sources.labels import LabelTable

_INTEGER = re.compile(r"-?[0-9]+")


def class_label(text: str, classes: Sequence[str], lookup: dict[str, int]) -> int | str:
    """The label of `text` under the class list `classes` (`lookup`: name -> position), or why
    it has none."""
    found = lookup.get(text)
    if found is not None:
        return found
    if _INTEGER.fullmatch(text):
        value = int(text)
        if 0 <= value < len(classes):
            return value
        return f"label {value} is outside the {len(classes)} classes of --classes"
    return f"label {text!r} is not among the {len(classes)} names of --classes"


def number_labels(
    shard_texts: Sequence[Sequence[str]],
) -> tuple[tuple[str, ...], list[list[int]]]:
    """`(classes, per shard: the final label of each of its texts)` for the label texts of
    every shard, in shard order."""
    table = LabelTable()
    ids = [[table.id(text) for text in texts] for texts in shard_texts]
    classes, lookup = table.finish()
    return classes, [[int(lookup[i]) for i in shard] for shard in ids]
