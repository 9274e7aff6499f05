"""What indexing one shard does whatever its format: the shard read once through a buffer (the
format's scan fills the rows), its tail read to the end for the digest, a read that fails named
as the shard's `SourceError`, and a label text turned into the sample's label."""

from __future__ import annotations

import io
from typing import BinaryIO

from fastpack.formats import FastpackError

from ..errors import SourceError
from .job import JobSettings, ShardSource
from .labels import class_label
from .sample_check import SampleChecker
from .shard_rows import ShardRows
from .stream import READ_BYTES, open_shard


class ShardIndexer:
    """The rows of one shard; a format's indexer implements `_scan`."""

    def __init__(self, source: ShardSource, settings: JobSettings, text_labels: bool) -> None:
        self.source, self.settings = source, settings
        self.schema = settings.schema
        self.rows = ShardRows(source.number, source.name, self.schema.names)
        self.rows.text_labels = text_labels
        self.checker = SampleChecker(self.schema, settings.check)
        self.lookup = {name: k for k, name in enumerate(settings.classes or ())}

    def run(self) -> ShardRows:
        try:
            with open_shard(self.source.url, self.settings.storage_options) as reader:
                stream = io.BufferedReader(reader, READ_BYTES)
                self._scan(stream)
                while stream.read(READ_BYTES):  # what the scan left: the digest covers it
                    pass
                self.rows.digest = reader.digest()
        except FastpackError:
            raise
        except OSError as e:
            raise SourceError(f"{self.source.url}: cannot read: {e.strerror or e}") from e
        return self.rows

    def _scan(self, stream: BinaryIO) -> None:
        """Fill `self.rows` from the shard's bytes."""
        raise NotImplementedError

    def _class_label(self, path: str, field: str, text: str) -> int | None:
        """The label of the non-blank label text `text` of sample `path`: the shard's number of
        the text, or (`--classes`) its class; None when the sample is rejected for it."""
        classes = self.settings.classes
        if classes is None:
            return self.rows.text_label(text)
        label = class_label(text, classes, self.lookup)
        if isinstance(label, str):
            self.rows.reject(path, field, label)
            return None
        return label
