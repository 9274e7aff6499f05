"""Entry point of a fuzz worker process: `python -m tests.fuzz._worker CONFIG`.

CONFIG is JSON: `workdir` (this process's own folder), `templates` (name -> dataset path) and
`address_space_kib` (how far the address space may grow during one case). The worker reads cases
(`{"target", "payload"}`, length-prefixed pickles) from stdin and answers each with its outcome
on the stdout it started with (what else writes to fd 1 goes to stderr): `kind`, `detail`,
`seconds`, and `peak_kib`, the case's peak resident memory above the process's resident
memory before it (VmHWM, reset before each case through /proc/self/clear_refs).
"""

from __future__ import annotations

import faulthandler
import json
import os
import pickle
import resource
import struct
import sys
import time
from pathlib import Path
from typing import IO, Any

import numpy as np

from .targets import TARGETS, Context, available, classify

_LENGTH = struct.Struct(">I")


def status_kib() -> dict[str, int]:
    """The KiB fields of /proc/self/status (VmRSS, VmHWM, VmSize, ...)."""
    found = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if rest.strip().endswith("kB"):
                found[key] = int(rest.split()[0])
    return found


def reset_peak() -> bool:
    """Reset VmHWM to the current resident size (Linux 4.0+); False where not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def read_message(stream: IO[bytes]) -> Any:
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    (size,) = _LENGTH.unpack(head)
    return pickle.loads(stream.read(size))


def write_message(stream: IO[bytes], message: Any) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)) + data)
    stream.flush()


def run_case(message: dict[str, Any], context: Context, address_space_kib: int) -> dict[str, Any]:
    target = TARGETS[message["target"]]
    before = status_kib()
    peaks = reset_peak()
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = (before["VmSize"] + address_space_kib) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard < 0 else min(limit, hard), hard))
    start = time.perf_counter()
    try:
        kind, detail = target.run(message["payload"], context)
    except Exception as e:  # everything a case raises is its outcome
        kind, detail = classify(e, target.allowed)
    seconds = time.perf_counter() - start
    resource.setrlimit(resource.RLIMIT_AS, (hard, hard))
    peak = status_kib()["VmHWM"] - before["VmRSS"] if peaks else 0
    detail = detail.replace(str(context.workdir), "<worker>")  # the same text in any worker
    for name, path in context.templates.items():
        detail = detail.replace(str(path), f"<template {name}>")
    return {"kind": kind, "detail": detail[:2000], "seconds": seconds, "peak_kib": max(peak, 0)}


def warm_up(context: Context) -> None:
    """Decode once through every path, and make the loaders of the state targets (torch's
    import among them), so that the first case's time and memory are its own."""
    import simplejpeg  # noqa: PLC0415 -- side effect: warms the worker up, so that the first case's time is its own
    from fastpack.reader import RandomResizedCrop  # noqa: PLC0415 -- side effect: warms the worker up, so that the first case's time is its own

    image = np.zeros((64, 64, 3), np.uint8)
    data = bytes(simplejpeg.encode_jpeg(image))
    RandomResizedCrop(32)(data, [0.5] * RandomResizedCrop.draws)
    simplejpeg.decode_jpeg(data)
    if "v1" in context.templates and available("state_map"):
        from .states import loaders  # noqa: PLC0415 -- on use: imports torch, in the workers that need it

        context.made["loaders"] = loaders(context.copy_of("v1", "states"))


def main() -> None:
    config = json.loads(sys.argv[1])
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a decoder's stray print must not break the protocol
    sys.stdout = sys.stderr
    faulthandler.enable()
    context = Context(Path(config["workdir"]), {k: Path(v) for k, v in config["templates"].items()})
    warm_up(context)
    write_message(answers, {"ready": os.getpid(), "peaks": reset_peak()})
    while (message := read_message(sys.stdin.buffer)) is not None:
        write_message(answers, run_case(message, context, config["address_space_kib"]))


if __name__ == "__main__":
    main()
