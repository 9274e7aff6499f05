"""`Delegated`: an attribute of a facade that is a field of one of its parts."""

from __future__ import annotations

import dataclasses
from typing import Any, Generic, TypeVar, cast, overload

T = TypeVar("T")


class Delegated(Generic[T]):
    """The attribute of a facade that reads the field of the same name of its part `part`, a
    frozen dataclass: `seed: Delegated[int] = Delegated("options")` reads `obj.options.seed`.
    Setting it replaces the part by a copy with that field changed, which the part checks as it
    checks itself when made; unless `settable` is False: then it is read-only."""

    def __init__(self, part: str, *, settable: bool = True) -> None:
        self.part, self.settable, self.name = part, settable, ""

    def __set_name__(self, owner: type[Any], name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> Delegated[T]: ...

    @overload
    def __get__(self, obj: object, owner: type[Any]) -> T: ...

    def __get__(self, obj: object | None, owner: type[Any]) -> Delegated[T] | T:
        if obj is None:
            return self
        return cast(T, getattr(getattr(obj, self.part), self.name))

    def __set__(self, obj: object, value: T) -> None:
        if not self.settable:
            raise AttributeError(f"{type(obj).__name__}.{self.name} is fixed when it is made")
        part = getattr(obj, self.part)
        setattr(obj, self.part, dataclasses.replace(part, **{self.name: value}))
