"""The checks of a loader's saved state, field by field, before any of it is used.

A state comes from outside (a checkpoint), so each field is checked exactly: an integer is an
`int` (not a `bool`, a float or a string of digits) within the range the order arithmetic
represents (`INT64_MAX`: epochs, positions and seeds are int64 there), a flag is a `bool`, a
list has its length, and a record has its fields, no fewer and no more. The first field that
fails is refused with a `LoaderStateError` naming it (`segments[1][3]`, `order.view.name`), what
was expected and what was found.

A schema is a tree of the checks here (`Integer`, `Flag`, `Text`, `Exact`, `Weight`, `Nullable`,
`Listed`, `Record`), each a frozen dataclass called as `check(value, field)`; `parse` applies
one to a whole state.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import LoaderStateError

INT64_MAX = 2**63 - 1  # the largest epoch, position or seed the order's int64 arithmetic holds
_MAX_QUOTE = 120  # characters of a value quoted in a message


class FieldMismatch(Exception):
    """A field that is not what its schema says (`parse` makes it a `LoaderStateError`)."""

    def __init__(self, name: str, expected: str, found: str) -> None:
        super().__init__(f"{name}: expected {expected}, found {found}")
        self.name, self.expected, self.found = name, expected, found


class Check(Protocol):
    """One field's check: the value, checked (a `FieldMismatch` otherwise)."""

    @property
    def expected(self) -> str: ...

    def __call__(self, value: Any, name: str) -> Any: ...


def parse(state: Any, schema: Check, *, where: str, kind: str) -> Any:
    """`state` checked by `schema`: a `LoaderStateError` naming the first field that fails."""
    try:
        return schema(state, "")
    except FieldMismatch as e:
        raise LoaderStateError(state_message(where, kind, e)) from None


def state_message(where: str, kind: str, mismatch: FieldMismatch) -> str:
    """The message of a state refused for `mismatch`."""
    what = f"field {mismatch.name!r}" if mismatch.name else "state"
    return f"{where}: {kind} state {what}: expected {mismatch.expected}, found {mismatch.found}"


def quote(value: Any) -> str:
    """`repr(value)`, cut to `_MAX_QUOTE` characters for an error message."""
    text = repr(value)
    return text if len(text) <= _MAX_QUOTE else text[: _MAX_QUOTE - 3] + "..."


def typed(value: Any) -> str:
    """A value of the wrong type, as a message shows it: its repr and its type."""
    return f"{quote(value)} ({type(value).__name__})"


def _bound(value: int) -> str:
    """A range's end as a message shows it (`2**63 - 1` rather than its 19 digits)."""
    return "2**63 - 1" if value == INT64_MAX else str(value)


@dataclass(frozen=True)
class Integer:
    """An `int` (not a bool) in `[lo, hi]`; `meaning` says what the range is."""

    lo: int = 0
    hi: int = INT64_MAX
    meaning: str = ""

    @property
    def expected(self) -> str:
        text = f"an integer in [{_bound(self.lo)}, {_bound(self.hi)}]"
        return f"{text} ({self.meaning})" if self.meaning else text

    def __call__(self, value: Any, name: str) -> int:
        if type(value) is not int:
            raise FieldMismatch(name, self.expected, typed(value))
        if not self.lo <= value <= self.hi:
            raise FieldMismatch(name, self.expected, f"{quote(value)}, outside that range")
        return value


@dataclass(frozen=True)
class Flag:
    """`True` or `False`."""

    expected: str = "True or False"

    def __call__(self, value: Any, name: str) -> bool:
        if type(value) is not bool:
            raise FieldMismatch(name, self.expected, typed(value))
        return value


@dataclass(frozen=True)
class Text:
    """A non-empty `str`."""

    expected: str = "a non-empty string"

    def __call__(self, value: Any, name: str) -> str:
        if type(value) is not str or not value:
            raise FieldMismatch(name, self.expected, typed(value))
        return value


@dataclass(frozen=True)
class Exact:
    """`wanted` itself, of its own type; `what` names it (a format, a version)."""

    wanted: str | int
    what: str

    @property
    def expected(self) -> str:
        return f"{self.what} {self.wanted!r}"

    def __call__(self, value: Any, name: str) -> Any:
        if type(value) is not type(self.wanted) or value != self.wanted:
            raise FieldMismatch(name, self.expected, typed(value))
        return value


@dataclass(frozen=True)
class Weight:
    """A finite `float` above 0 (a mix source's weight)."""

    expected: str = "a finite float above 0"

    def __call__(self, value: Any, name: str) -> float:
        if type(value) is not float or not math.isfinite(value) or value <= 0:
            raise FieldMismatch(name, self.expected, typed(value))
        return value


@dataclass(frozen=True)
class Nullable:
    """None, or what `inner` accepts."""

    inner: Check

    @property
    def expected(self) -> str:
        return f"None or {self.inner.expected}"

    def __call__(self, value: Any, name: str) -> Any:
        if value is None:
            return None
        try:
            return self.inner(value, name)
        except FieldMismatch as e:
            if e.name != name:  # a field inside it: that field's own message
                raise
            raise FieldMismatch(name, self.expected, e.found) from None


@dataclass(frozen=True)
class Listed:
    """A list (or tuple) of `size` items (None: any number, at most `most`), each what `item`
    accepts; checked as a list."""

    item: Check
    size: int | None = None
    most: int | None = None

    @property
    def expected(self) -> str:
        if self.size is not None:
            return f"a list of {self.size} items"
        return "a list" if self.most is None else f"a list of at most {self.most} items"

    def __call__(self, value: Any, name: str) -> list[Any]:
        if not isinstance(value, list | tuple):
            raise FieldMismatch(name, self.expected, typed(value))
        if (self.size is not None and len(value) != self.size) or (
            self.most is not None and len(value) > self.most
        ):
            raise FieldMismatch(name, self.expected, f"{len(value)} items: {quote(value)}")
        return [self.item(v, f"{name}[{k}]") for k, v in enumerate(value)]


@dataclass(frozen=True)
class Record:
    """A mapping: every `required` field, any of the `optional` ones and no other, each what
    its check accepts; checked as a plain dict."""

    required: Mapping[str, Check]
    optional: Mapping[str, Check] = field(default_factory=dict)

    @property
    def expected(self) -> str:
        return f"a mapping of {[*self.required, *self.optional]}"

    def __call__(self, value: Any, name: str) -> dict[str, Any]:
        if not isinstance(value, Mapping):
            raise FieldMismatch(name, self.expected, typed(value))
        known = [*self.required, *self.optional]
        for key in value:
            if key not in known:
                unknown = f"{name}.{key}" if name else str(key)
                found = f"an unknown field holding {quote(value[key])}"
                raise FieldMismatch(unknown, f"only the fields {known}", found)
        checked = {}
        for key, check in (*self.required.items(), *self.optional.items()):
            inner = f"{name}.{key}" if name else key
            if key in value:
                checked[key] = check(value[key], inner)
            elif key in self.required:
                raise FieldMismatch(inner, check.expected, "nothing: the field is missing")
        return checked
