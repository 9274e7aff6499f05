"""The errors of a build."""

from __future__ import annotations

import errno

from fastpack.formats import FastpackError


class BuildError(FastpackError):
    """A build cannot go on (bad source, --strict reject, incompatible --resume)."""


class SourceError(BuildError, ValueError):
    """The build's source is missing or malformed."""


class BuildDirError(BuildError):
    """The private directory of an unfinished build (`.fastpack-build/`: plan, shard records,
    index parts) lacks a file the build needs or holds one it cannot read."""


class OutputError(BuildError, OSError):
    """The machine refused the build's own files (disk full, no permission, an I/O error): the
    message names the shard and the file, and the system's error. Finished shards are kept."""


class WorkerDiedError(BuildError):
    """A shard worker process ended without finishing its job (killed, or out of memory): the
    message names the process, how it ended and the shards left unfinished."""


class BuildMemoryError(BuildError, MemoryError):
    """A shard job ran out of memory preparing an input within the pixel budget: the message
    names the input and the budget."""


def os_error_words(error: OSError, file: object = None) -> str:
    """An OSError in words: its file (else `file`, where given), the system's message and its
    errno name."""
    name = errno.errorcode.get(error.errno or 0, "")
    where = error.filename if error.filename is not None else file
    said = f"{error.strerror or error}" + (f" ({name})" if name else "")
    return f"{where}: {said}" if where is not None else said
