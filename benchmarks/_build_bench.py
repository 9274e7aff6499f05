"""Build speed, each kind timed `--repeats` times in one process (after the imports):

- `passthrough`: a fastpack build keeping the JPEGs as they are, and `shardwriter`: the same
  corpus through `webdataset.ShardWriter` (1 process), as the peers' conversions write it;
- `fastpack`: a fastpack `max_side` build, and `reencode`: `processes` processes doing nothing
  but decode + resize + encode on the corpus bytes in memory (the same operations as the build's
  image policy: full-size simplejpeg decode, OpenCV INTER_AREA, simplejpeg quality 90 4:2:0; no
  file reading, tar writing or indexing).

`python -m benchmarks._build_bench {passthrough,shardwriter,fastpack,reencode} --corpus C
--workdir W` prints `RESULT <json>`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

from ._parallel import timed_fork
from .peers._base import imagefolder_root, list_imagefolder

QUALITY = 90


def _fit(height: int, width: int, max_side: int) -> tuple[int, int]:
    longer = max(height, width)
    if longer <= max_side:
        return height, width
    return max(1, round(height * max_side / longer)), max(1, round(width * max_side / longer))


def _reencode_all(blobs: list[bytes], max_side: int) -> None:
    import cv2  # noqa: PLC0415
    import simplejpeg  # noqa: PLC0415

    cv2.setNumThreads(1)
    for data in blobs:
        pixels = simplejpeg.decode_jpeg(data, colorspace="RGB")
        height, width = _fit(pixels.shape[0], pixels.shape[1], max_side)
        if (height, width) != pixels.shape[:2]:
            pixels = cv2.resize(pixels, (width, height), interpolation=cv2.INTER_AREA)
        simplejpeg.encode_jpeg(pixels, quality=QUALITY, colorspace="RGB", colorsubsampling="420")


def reencode_rate(blobs: list[bytes], processes: int, max_side: int) -> float:
    """Images per second of `processes` forked decode + resize + encode loops."""
    shares = [(blobs[i::processes], max_side) for i in range(processes)]
    wall, _ = timed_fork(_reencode_all, shares)
    return len(blobs) / wall


def fastpack_rate(corpus: Path, out: Path, workers: int, max_side: int | None) -> float:
    """Images per second of a fastpack build (with `max_side`, if given) into a fresh `out`."""
    from .peers.fastpack_peer import build  # noqa: PLC0415

    shutil.rmtree(out, ignore_errors=True)
    began = time.perf_counter()
    build(corpus, out, workers, max_side=max_side)
    return len(list_imagefolder(imagefolder_root(corpus))) / (time.perf_counter() - began)


def shardwriter_rate(corpus: Path, out: Path) -> float:
    """Images per second of `webdataset.ShardWriter` writing the corpus into a fresh `out`."""
    from .peers._wds import write_shards  # noqa: PLC0415

    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    began = time.perf_counter()
    write_shards(corpus, out)
    return len(list_imagefolder(imagefolder_root(corpus))) / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("kind", choices=["passthrough", "shardwriter", "fastpack", "reencode"])
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--workdir", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--max-side", type=int, default=320)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.kind == "passthrough":
        out = args.workdir / "fastpack-pass-through"
        rates = [fastpack_rate(args.corpus, out, args.workers, None) for _ in range(args.repeats)]
    elif args.kind == "shardwriter":
        out = args.workdir / "shardwriter"
        rates = [shardwriter_rate(args.corpus, out) for _ in range(args.repeats)]
    elif args.kind == "fastpack":
        out = args.workdir / "fastpack-max-side"
        rates = [
            fastpack_rate(args.corpus, out, args.workers, args.max_side)
            for _ in range(args.repeats)
        ]
    else:
        blobs = [s.path.read_bytes() for s in list_imagefolder(imagefolder_root(args.corpus))]
        rates = [reencode_rate(blobs, args.workers, args.max_side) for _ in range(args.repeats)]
    print("RESULT " + json.dumps({"rates": rates, "max_side": args.max_side}), flush=True)


if __name__ == "__main__":
    main()
