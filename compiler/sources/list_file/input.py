"""Where a list file's lines come from and where its relative paths start: a local file and its
directory, or an object at a URL and its URL "directory" (read front to back through
`fastpack.storage`, one retried ranged read of `CHUNK_BYTES` at a time: never whole)."""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from fastpack.storage import Location, is_url

from ...errors import SourceError

CHUNK_BYTES = 8 << 20


@dataclass(frozen=True)
class ListInput:
    """A list file: `name` for messages, `suffix` in lower case, `root` the directory (a
    `Path`) or URL (a `str`) that its relative paths start from."""

    name: str
    suffix: str
    root: Path | str

    @property
    def remote(self) -> bool:
        return isinstance(self.root, str)

    def open(self) -> TextIO:
        """The file as UTF-8 text, newlines as they are (for `csv`); SourceError naming a
        list URL that cannot be opened."""
        if not self.remote:
            return Path(self.name).open(encoding="utf-8", newline="")
        folder, _, base = self.name.rpartition("/")
        try:
            stream = Location(folder).open_stream(base, CHUNK_BYTES)
        except FileNotFoundError as e:
            raise SourceError(f"{self.name}: list file not found") from e
        except OSError as e:
            raise SourceError(f"{self.name}: cannot read the list file: {e}") from e
        return io.TextIOWrapper(stream, encoding="utf-8", newline="")

    def file_size(self, path: str) -> int:
        """The size of the file `path` names: a local file's from stat (0 if it cannot be
        stat'ed: the shard job rejects it); 0 at a URL, where sizes are estimated
        (`url_sizes`)."""
        if self.remote or is_url(path):
            return 0
        try:
            return os.stat(os.path.join(self.root, path)).st_size
        except OSError:
            return 0


def list_input(source: Path | str) -> ListInput:
    """The list file at the path or URL `source`."""
    text = os.fspath(source)
    if is_url(text):
        folder, _, base = text.rpartition("/")
        if "://" not in folder or not base:
            raise SourceError(f"{text}: expected the URL of a list object (scheme://bucket/name)")
        return ListInput(text, os.path.splitext(base)[1].lower(), folder)
    path = Path(text)
    return ListInput(str(path), path.suffix.lower(), path.parent)
