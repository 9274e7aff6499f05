"""Datasets at URLs: reading their manifest, copying them whole."""

from .datasets import (
    dictionaries,
    fetch_dataset,
    read_manifest_at,
    read_manifest_bytes,
    read_remote_manifest,
)

__all__ = [
    "dictionaries",
    "fetch_dataset",
    "read_manifest_at",
    "read_manifest_bytes",
    "read_remote_manifest",
]
