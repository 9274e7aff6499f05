"""Progressive JPEGs transcoded to baseline, losslessly (`fastpack build --baseline`).

A progressive JPEG spreads every block over several scans, so a decoder must read the whole
file before it has one finished row: the reader's window decode then saves little. fastpack's C
extension (`_jpeg_baseline`, built against the system's libjpeg-turbo when its headers and a
compiler are present) rewrites such a file as one sequential scan of the same DCT coefficients
(Huffman tables optimized), so every decoder gives the same pixels as from the input. The
input's APPn and COM segments (EXIF, ICC profile, XMP, comments) are kept byte for byte.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from ..errors import BuildError

# SOF markers of progressive frames: Huffman (SOF2) and arithmetic (SOF10) coded
PROGRESSIVE_FRAMES = frozenset({0xC2, 0xCA})
MISSING = (
    "--baseline needs fastpack's JPEG transcoder, the C extension "
    "fastpack.compiler.images._jpeg_baseline, which is not built in this installation: install "
    "libjpeg-turbo's headers and a C compiler (Debian/Ubuntu: apt-get install "
    "libjpeg62-turbo-dev gcc; Fedora: dnf install libjpeg-turbo-devel gcc), then reinstall "
    "fastpack from its source (pip install --no-deps --force-reinstall ., or pip install -e . "
    "in a checkout); the crop decoder is built the same way"
)


class BaselineUnavailableError(BuildError, ImportError):
    """`baseline` was asked for where the transcoder extension is not built."""


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


def to_baseline(data: bytes) -> bytes:
    """The JPEG `data` as a baseline JPEG of the same DCT coefficients (module docstring).
    Raises ValueError with libjpeg's message for data it cannot read or warns about, and
    BaselineUnavailableError where the extension is not built."""
    extension = _EXTENSION
    if extension is None:
        raise BaselineUnavailableError(MISSING)
    return bytes(extension.to_baseline(data))
