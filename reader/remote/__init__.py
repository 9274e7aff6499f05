"""Datasets at URLs: reading their manifest, copying them whole."""

from .datasets import fetch_dataset, read_manifest_at, read_manifest_bytes, read_remote_manifest

__all__ = ["fetch_dataset", "read_manifest_at", "read_manifest_bytes", "read_remote_manifest"]
