"""The build's one door for input bytes: every decoder and parser call on them (simplejpeg,
OpenCV, the EXIF and marker walkers, the baseline transcoder, mask PNGs) runs through `guarded`,
which turns whatever it raises into an `InputError` whose message is the reject's reason. So no
input's content stops a build; it ends as a sample or as a line in `rejects.jsonl`.

A reason keeps the words of what failed: a ValueError's message as it is (libjpeg's, the
structure walker's), any other exception as its type and message and the call that raised it
(`KeyError: 6 (raised by simplejpeg.decode_jpeg_header)`, for a frame header whose sampling
factors simplejpeg cannot name). Only the machine's errors pass as they are: a MemoryError, which
the shard job names (`jobs.shard_job`), and an ImportError (a decoder or the transcoder extension
missing from this installation, `BaselineUnavailableError`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

from fastpack.formats import FieldValueError

P = ParamSpec("P")
T = TypeVar("T")
# what a call on input bytes raises that is not the input's doing
MACHINE_ERRORS: tuple[type[BaseException], ...] = (MemoryError, ImportError)


class InputError(FieldValueError):
    """An input whose bytes a decoder or parser cannot use; the message is the reject's reason.
    A FieldValueError, as the sample encoder rejects a field's value for one."""


def describe(error: BaseException, call: object = None) -> str:
    """What `error` says: a ValueError's message, any other exception's type and message (its
    last line: OpenCV's errors start with where in OpenCV), and the `call` that raised it."""
    text = str(error).strip()
    if isinstance(error, ValueError):
        return text
    lines = text.splitlines()
    said = f"{type(error).__name__}: {lines[-1].strip() if lines else ''}".rstrip(": ")
    return f"{said} (raised by {_name(call)})" if call is not None else said


def _name(call: object) -> str:
    """`package.function` of a callable: `simplejpeg.decode_jpeg_header`."""
    package = str(getattr(call, "__module__", None) or "").split(".")[0]
    name = str(getattr(call, "__qualname__", None) or getattr(call, "__name__", repr(call)))
    return f"{package}.{name}" if package else name


def guarded(prefix: str, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`call(*args, **kwargs)`; anything it raises but MACHINE_ERRORS becomes an InputError
    whose reason is `prefix: <what it said>` (an InputError passes as it is)."""
    try:
        return call(*args, **kwargs)
    except MACHINE_ERRORS:
        raise
    except InputError:
        raise
    except Exception as e:
        raise InputError(f"{prefix}: {describe(e, call)}") from e


def guarded_value(call: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """`guarded` for a field's value: a FieldValueError passes as it is (its message is the
    reason already), anything else but MACHINE_ERRORS becomes an InputError in its words."""
    try:
        return call(*args, **kwargs)
    except MACHINE_ERRORS:
        raise
    except FieldValueError:
        raise
    except Exception as e:
        raise InputError(describe(e, call)) from e
