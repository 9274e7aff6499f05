"""`Mix`: map-style datasets read as one, each with a fixed share of every epoch."""

from .dataset import Mix

__all__ = ["Mix"]
