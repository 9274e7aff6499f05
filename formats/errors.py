"""The one error hierarchy of fastpack. Each class also inherits the fitting builtin."""

from __future__ import annotations


class FastpackError(Exception):
    """Root of every error fastpack raises on purpose."""


class DatasetNotFoundError(FastpackError, FileNotFoundError):
    """A path that should be a dataset (or a file of one) does not exist."""


class FormatError(FastpackError, ValueError):
    """A file does not follow formats/SPEC.md."""


class BadMagicError(FormatError):
    """A binary file does not start with the expected magic bytes."""


class UnsupportedVersionError(FormatError):
    """A file declares a format version this reader does not know."""


class TruncatedFileError(FormatError, EOFError):
    """A file ends before the data its header promises."""


class CorruptIndexError(FormatError):
    """The index's section table or contents are inconsistent."""


class OffsetOutOfRangeError(FormatError, IndexError):
    """An index entry points past the end of its shard."""


class ManifestError(FormatError):
    """The manifest is not valid JSON or misses a required key."""


class ChecksumMismatchError(FormatError):
    """Bytes on disk do not match the checksum recorded for them."""


class ShardFormatError(FormatError):
    """A tar shard or its DALI index breaks the member rules."""


class BuildError(FastpackError):
    """A build cannot go on (bad source, --strict reject, incompatible --resume)."""


class SourceError(BuildError, ValueError):
    """The build's source is missing or malformed."""


class FetchError(FastpackError, OSError):
    """A remote object stays unavailable (or keeps arriving incomplete) after the retries."""


class SharedMemoryError(FastpackError, MemoryError):
    """The loader's shared-memory batch buffers do not fit in the machine's shared memory."""
