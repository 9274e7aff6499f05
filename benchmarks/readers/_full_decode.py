"""The full-decode rate: `processes` processes doing nothing but `simplejpeg.decode_jpeg`
(full size, RGB) on the corpus bytes held in memory. No reading, cropping, resizing or batching:
no loader that decodes every image at full size can beat it.

`python -m benchmarks.readers._full_decode --corpus /tmp/photo-corpus` prints `RESULT <json>`.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from benchmarks.parallel import timed_fork
from benchmarks.readers.peers._base import imagefolder_root, list_imagefolder


def _decode_all(blobs: list[bytes]) -> None:
    import simplejpeg  # noqa: PLC0415 -- on use: in the forked decoders

    for data in blobs:
        simplejpeg.decode_jpeg(data, colorspace="RGB")


def decode_rate(blobs: list[bytes], processes: int) -> tuple[float, float]:
    """(images per second, CPU ms per image) of `processes` forked decoders, each over its
    share of `blobs`."""
    shares = [(blobs[i::processes],) for i in range(processes)]
    wall, cpu = timed_fork(_decode_all, shares)
    return len(blobs) / wall, 1000 * cpu / len(blobs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    blobs = [s.path.read_bytes() for s in list_imagefolder(imagefolder_root(args.corpus))]
    runs = [decode_rate(blobs, args.processes) for _ in range(args.repeats)]
    result = {
        "rates": [rate for rate, _ in runs],
        "cpu_ms": [cpu for _, cpu in runs],
        "processes": args.processes,
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
