"""JPEGs transcoded to baseline, losslessly (`fastpack build --baseline`, `--restart-markers`).

A progressive JPEG spreads every block over several scans, so a decoder must read the whole
file before it has one finished row: the reader's window decode then saves little. fastpack's C
extension (`_jpeg_baseline`, built against the system's libjpeg-turbo when its headers and a
compiler are present) rewrites such a file as one sequential scan of the same DCT coefficients
(Huffman tables optimized), so every decoder gives the same pixels as from the input. The
input's APPn and COM segments (EXIF, ICC profile, XMP, comments) are kept byte for byte.
With `restart_width` the transcode also writes restart markers that split every MCU row into
equal intervals about that many pixels wide (`RESTART_WIDTH` for `--restart-markers`): the
reader's window decode then entropy-decodes only the intervals around a crop instead of every
row above and beside it.

`to_baseline_lossless` is the transcode a build stores: it refuses an incomplete progressive
file (a coefficient never sent or never refined to its last bit, which a decoder smooths and a
baseline copy would not), then decodes the original and the transcode and refuses unless their
pixels are identical. The extension bounds its memory (`max_memory`: libjpeg's coefficient
buffers and the output, default `DEFAULT_MAX_MEMORY`) and the number of scans it reads (500).
"""

from __future__ import annotations

import importlib
from types import ModuleType

import numpy as np
import simplejpeg

from ..errors import BuildError

# SOF markers of progressive frames: Huffman (SOF2) and arithmetic (SOF10) coded
PROGRESSIVE_FRAMES = frozenset({0xC2, 0xCA})
DEFAULT_MAX_MEMORY = 1 << 30  # the extension's own default, in bytes
MAX_RESTART_WIDTH = 65535  # pixels: the extension's bound
# restart intervals of `--restart-markers`, in pixels: chosen by benchmarks/readers/RESTART.md
RESTART_WIDTH = 64
MISSING = (
    "--baseline and --restart-markers need fastpack's JPEG transcoder, the C extension "
    "fastpack.compiler.images._jpeg_baseline, which is not built in this installation: install "
    "libjpeg-turbo's headers and a C compiler (Debian/Ubuntu: apt-get install "
    "libjpeg62-turbo-dev gcc; Fedora: dnf install libjpeg-turbo-devel gcc), then reinstall "
    "fastpack from its source (pip install --no-deps --force-reinstall ., or pip install -e . "
    "in a checkout); the crop decoder is built the same way"
)


class BaselineUnavailableError(BuildError, ImportError):
    """`baseline` was asked for where the transcoder extension is not built."""


class TranscodeNotLosslessError(BuildError, ValueError):
    """The baseline transcode of a JPEG would not decode to the original's pixels (an
    incomplete progressive file, or pixels that differ); the message says why."""


def _load_extension() -> ModuleType | None:
    try:
        return importlib.import_module(f"{__package__}._jpeg_baseline")
    except ImportError:  # not built (no compiler or headers), or libjpeg missing at run time
        return None


_EXTENSION = _load_extension()


def baseline_available() -> bool:
    """Whether the transcoder extension is installed and loads."""
    return _EXTENSION is not None


def require_baseline() -> None:
    """Raise BaselineUnavailableError, saying how to get the extension, where it is missing."""
    if _EXTENSION is None:
        raise BaselineUnavailableError(MISSING)


def to_baseline(
    data: bytes, *, restart_width: int = 0, max_memory: int = DEFAULT_MAX_MEMORY
) -> bytes:
    """The JPEG `data` as a baseline JPEG of the same DCT coefficients (module docstring),
    with restart markers every `restart_width` pixels or so of each MCU row (0: none; the
    extension's docstring says how the interval is chosen).
    Raises ValueError with libjpeg's message for data it cannot read or warns about, or that
    needs more than `max_memory` bytes (its subclass IncompleteProgressiveError for an
    incomplete progressive file), and BaselineUnavailableError where the extension is not
    built."""
    extension = _EXTENSION
    if extension is None:
        raise BaselineUnavailableError(MISSING)
    return bytes(extension.to_baseline(data, restart_width=restart_width, max_memory=max_memory))


def to_baseline_lossless(
    data: bytes, *, restart_width: int = 0, max_memory: int = DEFAULT_MAX_MEMORY
) -> bytes:
    """`to_baseline(data, restart_width=restart_width)` where it decodes to exactly the
    original's pixels. Raises TranscodeNotLosslessError with the reason where it would not
    (an incomplete progressive file, or pixels that differ), ValueError where libjpeg cannot
    read the data, and BaselineUnavailableError where the extension is not built."""
    extension = _EXTENSION
    if extension is None:
        raise BaselineUnavailableError(MISSING)
    try:
        transcoded = to_baseline(data, restart_width=restart_width, max_memory=max_memory)
    except extension.IncompleteProgressiveError as e:
        raise TranscodeNotLosslessError(f"{_CHANGES_PIXELS}: {e}") from e
    require_same_pixels(data, transcoded)
    return transcoded


_CHANGES_PIXELS = "the baseline transcode would change pixels"


def require_same_pixels(original: bytes, transcoded: bytes) -> None:
    """Raise TranscodeNotLosslessError unless both JPEGs decode (simplejpeg, RGB) to the same
    pixels; a decode that fails is such a refusal too, with the decoder's message."""
    try:
        before = simplejpeg.decode_jpeg(original, colorspace="RGB", strict=True)
        after = simplejpeg.decode_jpeg(transcoded, colorspace="RGB", strict=True)
    except (ValueError, KeyError) as e:  # KeyError: simplejpeg on unusual sampling factors
        raise TranscodeNotLosslessError(
            f"{_CHANGES_PIXELS}: the comparison's decode failed: {e!r}"
        ) from e
    if before.shape != after.shape:
        got, want = ("x".join(map(str, p.shape)) for p in (after, before))
        raise TranscodeNotLosslessError(
            f"{_CHANGES_PIXELS}: it decodes to {got} pixels, the original to {want}"
        )
    if not np.array_equal(before, after):
        difference = int(np.abs(before.astype(np.int16) - after.astype(np.int16)).max())
        raise TranscodeNotLosslessError(
            f"{_CHANGES_PIXELS}: it decodes up to {difference} levels away from the original"
        )
