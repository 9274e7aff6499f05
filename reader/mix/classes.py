"""One class table for a mix: the sources' class names unified by name."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt


def unify_classes(
    tables: Sequence[Sequence[str]],
) -> tuple[tuple[str, ...], list[npt.NDArray[np.int64]]]:
    """The union of `tables` (the first source's classes in its order, then each new name as a
    later source brings it) and, per source, the array mapping its class ids to the union's."""
    union: dict[str, int] = {}
    maps = []
    for table in tables:
        maps.append(np.array([union.setdefault(name, len(union)) for name in table], np.int64))
    return tuple(union), maps


def remap(
    ids: npt.NDArray[np.int64], mapping: npt.NDArray[np.int64], where: str
) -> npt.NDArray[np.int64]:
    """`ids` of a source's class table in the unified table; an id outside its table (a
    negative "no class" value passes unchanged) is a ValueError naming `where`."""
    ids = np.asarray(ids, np.int64)
    if ids.size and ids.max(initial=-1) >= len(mapping):
        raise ValueError(f"{where}: class id {int(ids.max())} outside its {len(mapping)} classes")
    if len(mapping) == 0:
        return ids
    return np.where(ids >= 0, mapping[np.clip(ids, 0, max(len(mapping) - 1, 0))], ids)
