"""The root of fastpack's errors and the errors about the on-disk format.

Every error fastpack raises on purpose is a `FastpackError`; each class also inherits the fitting
builtin. The errors of the other parts derive from the same root: `fastpack.storage.FetchError`,
`fastpack.compiler.BuildError` and `SourceError`, `fastpack.reader.SharedMemoryError`.
"""

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


class OffsetOutOfRangeError(FormatError):
    """An index entry points past the end of its shard.

    Not an `IndexError`: Python's sequence protocol would take it for the end of the data."""


class ManifestError(FormatError):
    """The manifest is not valid JSON or misses a required key."""


class ChecksumMismatchError(FormatError):
    """Bytes on disk do not match the checksum recorded for them."""


class ShardFormatError(FormatError):
    """A tar shard or its DALI index breaks the member rules."""


class FieldValueError(FormatError):
    """A field value that does not fit its schema entry, or member bytes that do not decode."""


class ViewError(FormatError):
    """A view file (formats/SPEC.md section 8) is malformed."""


class ViewMismatchError(FastpackError, ValueError):
    """A view was made for another dataset than the one it is opened with."""


class AbsentFieldError(FastpackError, LookupError):
    """A sample lacks a member of an optional field that was asked for.

    A LookupError, never an IndexError: the sequence protocol must not take it for the end."""


class VersionNotFoundError(FastpackError, LookupError):
    """A dataset version that the dataset does not have (formats/SPEC.md section 11)."""
