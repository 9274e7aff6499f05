"""What selects the samples of a view: the options of `fastpack view`, checked, and the names of
the views they make."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fastpack.formats import FastpackError
from fastpack.formats.view import is_view_name


class ViewOptionsError(FastpackError, ValueError):
    """Options that select no view: a bad fraction or split, an unknown class, no sample."""


Parts = tuple[tuple[str, float], ...]


def parse_split(text: str) -> Parts:
    """`"train:0.9,val:0.1"` -> `(("train", 0.9), ("val", 0.1))`."""
    parts = []
    for item in text.split(","):
        name, colon, fraction = item.strip().partition(":")
        try:
            value = float(fraction) if colon else math.nan
        except ValueError:
            value = math.nan
        if math.isnan(value):
            raise ViewOptionsError(
                f"split {text!r}: part {item.strip()!r} should be NAME:FRACTION, e.g. "
                "train:0.9,val:0.1"
            )
        parts.append((name.strip(), value))
    return tuple(parts)


@dataclass(frozen=True, kw_only=True)
class ViewOptions:
    """The options of a view (formats/SPEC.md section 8, "Definition"); all that are given must
    hold for a sample to be in the view, and a split cuts what they select into parts."""

    classes: tuple[str, ...] | None = None
    fraction: float | None = None
    split: Parts | None = None
    where: str | None = None
    balance: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        if self.classes is not None and not self.classes:
            raise ViewOptionsError("classes: give at least one class")
        if self.fraction is not None and not 0 < self.fraction <= 1:
            raise ViewOptionsError(f"fraction {self.fraction}: expected a number in (0, 1]")
        if self.split is not None:
            _check_split(self.split)
        if self.where is not None and not self.where:
            raise ViewOptionsError("where: the glob is empty")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ViewOptionsError(f"seed {self.seed!r}: expected an int")
        if not 0 <= self.seed < 2**64:
            raise ViewOptionsError(f"seed {self.seed}: expected an int in [0, 2^64)")

    @classmethod
    def of(  # noqa: PLR0913 -- keyword inputs
        cls,
        *,
        classes: Sequence[str] | None = None,
        fraction: float | None = None,
        split: str | Mapping[str, float] | Sequence[tuple[str, float]] | None = None,
        where: str | None = None,
        balance: bool = False,
        seed: int = 0,
    ) -> ViewOptions:
        """Options from the arguments of `build_views`: `split` as text (`"train:0.9,val:0.1"`),
        a mapping or pairs."""
        if isinstance(split, str):
            parts: Parts | None = parse_split(split)
        elif isinstance(split, Mapping):
            parts = tuple((str(k), float(v)) for k, v in split.items())
        else:
            parts = None if split is None else tuple((str(k), float(v)) for k, v in split)
        return cls(
            classes=None if classes is None else tuple(classes),
            fraction=fraction,
            split=parts,
            where=where,
            balance=balance,
            seed=seed,
        )

    def names(self, name: str | None) -> list[str]:
        """The names of the views these options make: `name`, or with a split one per part,
        `<name>-<part>` (or `<part>` without `name`)."""
        if self.split is None:
            if name is None:
                raise ViewOptionsError(
                    "a view needs a name; only a split names its views, after its parts"
                )
            names = [name]
        else:
            names = [part if name is None else f"{name}-{part}" for part, _ in self.split]
        for n in names:
            if not is_view_name(n):
                raise ViewOptionsError(
                    f"view name {n!r}: expected 1 to 128 characters of [A-Za-z0-9._-], not "
                    "starting with '.'"
                )
        return names

    def definition(self, part: str | None) -> dict[str, Any]:
        """The header's `definition` of the view of split part `part` (None: no split)."""
        split = None
        if self.split is not None:
            split = {"part": part, "parts": [[n, f] for n, f in self.split]}
        return {
            "classes": None if self.classes is None else list(self.classes),
            "fraction": self.fraction,
            "split": split,
            "where": self.where,
            "seed": self.seed,
            "balance": self.balance,
        }

    def describe(self) -> str:
        """The options given, as `fastpack view` spells them."""
        given = []
        if self.classes is not None:
            given.append(f"--classes {','.join(self.classes)}")
        if self.fraction is not None:
            given.append(f"--fraction {self.fraction:g}")
        if self.where is not None:
            given.append(f"--where {self.where!r}")
        if self.split is not None:
            given.append("--split " + ",".join(f"{n}:{f:g}" for n, f in self.split))
        if self.fraction is not None or self.split is not None:
            given.append(f"--seed {self.seed}")
        return " ".join(given) or "no options"


def _check_split(parts: Parts) -> None:
    spelled = ",".join(f"{n}:{f:g}" for n, f in parts)
    if not parts:
        raise ViewOptionsError("split: give at least one part, e.g. train:0.9,val:0.1")
    for name, fraction in parts:
        if not name:
            raise ViewOptionsError(f"split {spelled}: a part has no name")
        if not 0 < fraction <= 1:
            raise ViewOptionsError(
                f"split {spelled}: part {name!r} has fraction {fraction:g}, expected (0, 1]"
            )
    names = [n for n, _ in parts]
    if len(set(names)) != len(names):
        raise ViewOptionsError(f"split {spelled}: part names repeat")
    total = math.fsum(f for _, f in parts)
    if total > 1 + 1e-9:
        raise ViewOptionsError(f"split {spelled}: the fractions sum to {total:g}, more than 1")
