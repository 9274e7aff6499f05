"""Label text to label numbers, for sources that name labels per sample (list files, tar `cls`).

Integer labels are used as they are (and the dataset has no class names) when every label is an
integer; otherwise each distinct label is a class name and its label is the index of the name in
sorted order. Memory grows with the number of distinct labels, not of samples.
"""

from __future__ import annotations

import re

import numpy as np
import numpy.typing as npt

_INTEGER = re.compile(r"-?[0-9]+")


class LabelTable:
    """Numbers labels in first-seen order during a scan; `finish` maps them to final labels."""

    def __init__(self) -> None:
        self._ids: dict[str, int] = {}

    def id(self, text: str) -> int:
        found = self._ids.get(text)
        if found is None:
            found = self._ids[text] = len(self._ids)
        return found

    def finish(self) -> tuple[tuple[str, ...], npt.NDArray[np.int64]]:
        """`(classes, lookup)`: the class names (empty for integer labels) and, for each
        first-seen id, its final label."""
        names = list(self._ids)
        if all(_INTEGER.fullmatch(n) for n in names):
            return (), np.array([int(n) for n in names], dtype="<i8")
        classes = tuple(sorted(names))
        position = {name: i for i, name in enumerate(classes)}
        return classes, np.array([position[n] for n in names], dtype="<i8")
