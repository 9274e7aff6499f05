"""What a shard's indexing job is given: the shard, and the settings every job shares."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fastpack.formats import Schema

from ..images.policy import Check
from ..sources.tfrecord.layout import Layout as RecordLayout
from ..sources.wds.fields import Layout as TarLayout


@dataclass(frozen=True, slots=True)
class ShardSource:
    """One shard: `url` (a local path or a URL) is read; `name` is its name under the shard
    root, recorded in the manifest and in sample sources; `number` its position."""

    number: int
    url: str
    name: str


@dataclass(frozen=True, kw_only=True)
class JobSettings:
    """The dataset's schema, how members or features feed it (`tar` or `records`), the class
    list (None: labels numbered from their texts), the image check, and the storage options of
    remote shards."""

    schema: Schema
    tar: TarLayout | None = None
    records: RecordLayout | None = None
    classes: tuple[str, ...] | None = None
    check: Check = "structure"
    storage_options: Mapping[str, Any] = field(default_factory=dict)
