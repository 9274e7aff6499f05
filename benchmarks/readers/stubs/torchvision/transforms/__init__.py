"""Import-time stand-in for `torchvision.transforms`."""

__all__: list[str] = []
