"""The options of an append: the dataset's own output-shaping options, read from its
manifest's `build`, so that appended shards are shaped as the dataset's are; the caller's
options say how to run (workers, strict, progress, the source's format and images)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from fastpack.formats import Manifest
from fastpack.formats.image_header import DEFAULT_PIXEL_BUDGET

from ..build_schema import parse_build_schema
from ..options import RECORDED_WHERE_SET, BuildOptions
from .errors import AppendError

_DEFAULTS = BuildOptions()
# `build` keys that are not options of the append: what the build was, how it went
_RECORDS = frozenset({"source_kind", "samples_per_shard", "dictionaries", "images_root"})
# Builds made before the `check` option existed decoded every JPEG they kept.
_BEFORE_CHECK = "decode"
_SHOWN = 120  # characters of an option's value an error quotes


def _shown(value: Any) -> str:
    text = repr(value.to_json() if hasattr(value, "to_json") else value)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


def dataset_shaping(build: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The `BuildOptions` that shaped the dataset, by name, from its manifest's `build`;
    `AppendError` for a `build` this append cannot follow."""
    unknown = sorted(set(build) - _RECORDS - set(_DEFAULTS.shaping()) - RECORDED_WHERE_SET)
    if unknown or "shard_size" not in build or "quality" not in build:
        what = f"the options {', '.join(unknown)}" if unknown else "no shard_size or quality"
        raise AppendError(
            f"{where}: its manifest's 'build' records {what}, which an append cannot follow; "
            "build a new dataset instead"
        )
    schema = build.get("schema")
    return {
        "shard_size": build["shard_size"],
        "shuffle_seed": build.get("shuffle_seed"),
        "max_side": build.get("max_side"),
        "quality": build["quality"],
        "check": build.get("check", _BEFORE_CHECK),
        "baseline": build.get("baseline", False),
        "restart_width": build.get("restart_width", 0),
        "pixel_budget": build.get("pixel_budget", DEFAULT_PIXEL_BUDGET),
        "schema": None if schema is None else parse_build_schema(schema, f"{where}: build"),
        "dictionary_size": build.get("dictionary_size", _DEFAULTS.dictionary_size),
        "render_masks": build.get("render_masks", False),
        "shard_format": build.get("shard_format", "tar"),
    }


def append_options(manifest: Manifest, given: BuildOptions, where: str) -> BuildOptions:
    """`given` with the dataset's shaping options; `AppendError` where `given` sets one to
    another value than the dataset's (an append cannot reshape a dataset)."""
    if given.num_nodes != 1 or given.node_rank is not None:
        raise AppendError(
            f"{where}: an append runs on one machine; num_nodes={given.num_nodes}, "
            f"node_rank={given.node_rank}: leave them out"
        )
    theirs = dataset_shaping(manifest.build, where)
    for name, value in theirs.items():
        mine = getattr(given, name)
        if mine != getattr(_DEFAULTS, name) and mine != value:
            raise AppendError(
                f"{where}: an append takes the dataset's own options; {name}={_shown(mine)} "
                f"differs from the dataset's {name}={_shown(value)}: leave it out"
            )
    return dataclasses.replace(given, **theirs)
