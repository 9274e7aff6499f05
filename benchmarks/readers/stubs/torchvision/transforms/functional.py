"""`to_tensor` for `import streaming`; calling it raises."""

from typing import Any

__all__ = ["to_tensor"]


def to_tensor(pic: Any) -> Any:
    raise NotImplementedError("torchvision stub: to_tensor is not available")
