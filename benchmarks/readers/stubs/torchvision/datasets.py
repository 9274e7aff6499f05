"""`VisionDataset` and `CIFAR10` names for `import streaming`; using them raises."""

from typing import Any

__all__ = ["CIFAR10", "VisionDataset"]


class VisionDataset:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("torchvision stub: VisionDataset is not available")


class CIFAR10(VisionDataset):
    pass
