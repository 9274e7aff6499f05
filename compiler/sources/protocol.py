"""The `Source` protocol: what every source format gives detection and planning."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from .scan import SourceOptions, SourceScan


class Source(Protocol):
    """A source format, as the registry (`registry.SOURCES`) holds it.

    `kind` is its name: a build's `source_format`, the CLI's `--format`, a plan's kind;
    `description` says what a source of this kind is, in the CLI's help of `build`.
    Detection (`detect.detect_kind`) reads the rest: a file is this kind when `names_file`
    claims its name or it ends in one of `suffixes` (lower case); a directory of nothing but
    such files (and no subfolders) is this kind when `directory_files` (how messages name the
    files) is set; a `file_only` source is never a directory; `shard_urls` sources take
    `pipe:` commands, `{..}` patterns and `::` lists of URLs. `member_images` says its images
    are members of containers (tars, record files, spill files), so that its plan keeps their
    offsets. `open` starts the scan of a source detected as this kind."""

    @property
    def kind(self) -> str: ...
    @property
    def description(self) -> str: ...
    @property
    def suffixes(self) -> tuple[str, ...]: ...
    @property
    def directory_files(self) -> str | None: ...
    @property
    def file_only(self) -> bool: ...
    @property
    def shard_urls(self) -> bool: ...
    @property
    def member_images(self) -> bool: ...

    def names_file(self, name: str) -> bool:
        """Whether a file named `name` is this kind whatever its suffix (checked first)."""
        ...

    def open(self, source: str, work_dir: Path | None, options: SourceOptions | None) -> SourceScan:
        """The scan of `source`; bytes it must copy or spill go under `work_dir`."""
        ...
