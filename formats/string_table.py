"""Many strings as one UTF-8 blob plus u64 offsets: no Python object per string on disk."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import numpy.typing as npt

U8Array = npt.NDArray[np.uint8]
U64Array = npt.NDArray[np.uint64]


def pack_strings(strings: Iterable[str]) -> tuple[U8Array, U64Array]:
    """Encode strings into `(blob, offsets)` with `len(offsets) == len(strings) + 1`."""
    encoded = [s.encode("utf-8") for s in strings]
    offsets = np.zeros(len(encoded) + 1, dtype="<u8")
    if encoded:
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
    blob = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    return blob, offsets


def string_at(blob: U8Array, offsets: U64Array, i: int) -> str:
    """The `i`-th string of a packed table."""
    return bytes(blob[int(offsets[i]) : int(offsets[i + 1])]).decode("utf-8")


def unpack_strings(blob: U8Array, offsets: U64Array) -> Sequence[str]:
    """All strings of a packed table (for small tables and tests)."""
    return [string_at(blob, offsets, i) for i in range(len(offsets) - 1)]
