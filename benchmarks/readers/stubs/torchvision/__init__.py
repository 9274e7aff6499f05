"""Import-time stand-in for torchvision, for the Mosaic Streaming benchmark peer only."""

__all__: list[str] = []
