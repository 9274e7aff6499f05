"""The one registry of source formats: detection, `BuildOptions.source_format` and the CLI's
`--format` choices all read `SOURCES`.

Adding a source format means one folder (its scan and its `Source`) and one line in `_BUILT_IN`
(or a `register_source` call, as a test's toy source does)."""

from __future__ import annotations

from ..errors import SourceError
from .coco.source import COCO
from .folder.source import FOLDER
from .list_file.source import LIST
from .parquet.source import PARQUET
from .protocol import Source
from .tfrecord.source import TFRECORD
from .wds.source import WDS

AUTO = "auto"  # the source format that asks detection
# in the order the CLI and messages list them
_BUILT_IN: tuple[Source, ...] = (FOLDER, LIST, WDS, COCO, PARQUET, TFRECORD)

SOURCES: dict[str, Source] = {}


def register_source(source: Source) -> None:
    """Add `source` to the registry under its kind; a kind is registered once."""
    if source.kind == AUTO or source.kind in SOURCES:
        raise SourceError(f"source kind {source.kind!r} is already taken")
    SOURCES[source.kind] = source


def source_formats() -> tuple[str, ...]:
    """What a build's `source_format` may be: `auto`, then every registered kind."""
    return (AUTO, *SOURCES)


def source_of(kind: str, source: object) -> Source:
    """The registered source format `kind`; SourceError naming `source` for another kind."""
    try:
        return SOURCES[kind]
    except KeyError:
        raise SourceError(
            f"{source}: unknown source kind {kind!r}; expected one of {tuple(SOURCES)}"
        ) from None


for _source in _BUILT_IN:
    register_source(_source)
