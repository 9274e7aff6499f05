"""`ClosesOnExit`: `with reader:` closes the reader when the block ends."""

from __future__ import annotations

from types import TracebackType
from typing import TypeVar

T = TypeVar("T", bound="ClosesOnExit")


class ClosesOnExit:
    """Context-manager support for a class with a `close()` method."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self: T) -> T:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
