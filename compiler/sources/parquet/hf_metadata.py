"""The Hugging Face metadata of a Parquet file: its `features`, and a `ClassLabel`'s names."""

from __future__ import annotations

import json
from typing import Any


def hf_features(schema: Any) -> dict[str, Any]:
    """The `features` of a Hugging Face file's metadata (empty when it has none)."""
    raw = (schema.metadata or {}).get(b"huggingface")
    try:
        features = json.loads(raw)["info"]["features"] if raw else {}
    except (ValueError, KeyError, TypeError):
        return {}
    return features if isinstance(features, dict) else {}


def class_names(feature: Any) -> tuple[str, ...]:
    """A `ClassLabel`'s names, also inside a `Sequence` or list feature."""
    if isinstance(feature, list) and len(feature) == 1:
        return class_names(feature[0])
    if not isinstance(feature, dict):
        return ()
    if feature.get("_type") == "ClassLabel":
        names = feature.get("names")
        if isinstance(names, list) and all(isinstance(n, str) for n in names):
            return tuple(names)
        return ()
    return class_names(feature.get("feature"))
