"""Entry point of `pixel_budget_bench`: one measurement in a fresh process, its peak RSS
(`VmHWM` of its own address space) and wall time on a `RESULT <json>` line.

    python -m benchmarks.readers._pixel_budget_run imports
    python -m benchmarks.readers._pixel_budget_run build SRC OUT [fastpack build flags...]
    python -m benchmarks.readers._pixel_budget_run read DATASET INDEX rrc|center|full DECODER
    python -m benchmarks.readers._pixel_budget_run verify DATASET

DECODER: window or simplejpeg.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.procmem import status_kib

_KIB = 1024


def _imports() -> dict[str, Any]:
    import cv2  # noqa: PLC0415, F401 -- side effect: the imports step measures what every other step imports
    import fastpack.compiler  # noqa: PLC0415 -- side effect: the imports step measures what every other step imports
    import fastpack.reader  # noqa: PLC0415, F401 -- side effect: the imports step measures what every other step imports
    import simplejpeg  # noqa: PLC0415, F401 -- side effect: the imports step measures what every other step imports

    return {}


def _build(args: list[str]) -> dict[str, Any]:
    from fastpack.formats import read_manifest  # noqa: PLC0415 -- on use: each step's process loads what it measures

    from fastpack.cli import main  # noqa: PLC0415 -- on use: each step's process loads what it measures

    code = main(["build", *args, "--workers", "1", "--no-progress"])
    stats = dict(read_manifest(Path(args[1]) / "fastpack.json").stats) if code == 0 else {}
    return {"exit": code, "stats": stats}


def _read(args: list[str]) -> dict[str, Any]:
    from fastpack.reader import CenterCrop, Dataset, RandomResizedCrop  # noqa: PLC0415 -- on use: each step's process loads what it measures
    from fastpack.reader.image.crop_decode import use_window_decode  # noqa: PLC0415 -- on use: each step's process loads what it measures

    path, index, transform, decoder = args
    use_window_decode(decoder == "window")
    transforms: dict[str, RandomResizedCrop | CenterCrop | None] = {
        "rrc": RandomResizedCrop(224),
        "center": CenterCrop(224),
        "full": None,
    }
    chosen = transforms[transform]
    with Dataset(path, transform=chosen) as ds:
        image = ds[int(index)][0]
    return {"shape": list(image.shape)}


def _verify(args: list[str]) -> dict[str, Any]:
    from fastpack.reader import verify_dataset  # noqa: PLC0415 -- on use: each step's process loads what it measures

    report = verify_dataset(args[0], decode=True)
    return {"ok": report.ok, "problems": report.problems}


STEPS: dict[str, Callable[[list[str]], dict[str, Any]]] = {
    "build": _build,
    "read": _read,
    "verify": _verify,
}


def main() -> None:
    step, args = sys.argv[1], sys.argv[2:]
    started = time.perf_counter()
    result = STEPS[step](args) if step != "imports" else _imports()
    result["seconds"] = round(time.perf_counter() - started, 2)
    result["peak_mib"] = round(status_kib("self").get("VmHWM", 0) / _KIB, 1)
    print("RESULT " + json.dumps(result))


if __name__ == "__main__":
    main()
