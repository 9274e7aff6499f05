"""Human byte sizes for the command line: `256MB`, `1GiB`, `4096`."""

from __future__ import annotations

import re

_UNITS: dict[str, int] = {
    "": 1,
    "b": 1,
    "k": 10**3,
    "kb": 10**3,
    "m": 10**6,
    "mb": 10**6,
    "g": 10**9,
    "gb": 10**9,
    "t": 10**12,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}
_PATTERN = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*")
_STEP = 1024  # from one binary unit to the next


def parse_size(text: str) -> int:
    """Bytes in `text`: a number with an optional unit (decimal `MB`, binary `MiB`)."""
    match = _PATTERN.fullmatch(text)
    unit = match.group(2).lower() if match else ""
    if match is None or unit not in _UNITS:
        raise ValueError(
            f"invalid size {text!r}: expected a number of bytes with an optional unit "
            "(KB, MB, GB, TB, KiB, MiB, GiB, TiB), e.g. 256MB"
        )
    size = int(float(match.group(1)) * _UNITS[unit])
    if size <= 0:
        raise ValueError(f"invalid size {text!r}: must be more than 0 bytes")
    return size


def format_size(size: int) -> str:
    """`size` bytes in the largest binary unit that keeps the number at least 1."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < _STEP:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= _STEP
    return f"{value:.1f} TiB"
