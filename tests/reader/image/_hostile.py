"""Real JPEGs with an edited frame header, for the tests of the pixel budget and of the decode
guard (the reader's and the compiler's): a small progressive file whose SOF claims 32768 x 32768,
and a 4:4:4 file whose luma sampling factors simplejpeg's header reader cannot name."""

from __future__ import annotations

import subprocess
import sys

import cv2
import numpy as np
import simplejpeg

from tests.conftest import synthetic_rgb

_FRAMES = (b"\xff\xc0", b"\xff\xc1", b"\xff\xc2")
HUGE = 32768  # the case: a ~1 KB progressive JPEG whose SOF claims 32768 x 32768
# A child that decodes nothing large stays near the interpreter and its libraries (about 60-150
# MB); the decodes these headers asked for took 2.2 to 9.5 GB before the budget.
SMALL_PEAK_MB = 400


def frame_at(data: bytes) -> int:
    """The offset of the JPEG's frame header (SOF0, SOF1 or SOF2) marker."""
    found = [at for at in (data.find(m) for m in _FRAMES) if at >= 0]
    if not found:
        raise ValueError("no SOF0-SOF2 frame header")
    return min(found)


def with_frame_size(data: bytes, height: int, width: int) -> bytes:
    """`data` with the height and width of its frame header replaced (same length)."""
    at = frame_at(data)
    edited = bytearray(data)
    edited[at + 5 : at + 9] = height.to_bytes(2, "big") + width.to_bytes(2, "big")
    return bytes(edited)


def progressive_jpeg(height: int = 32, width: int = 32, seed: int = 0) -> bytes:
    """A small progressive 4:2:0 JPEG made by OpenCV's libjpeg-turbo."""
    bgr = cv2.cvtColor(synthetic_rgb(height, width, seed), cv2.COLOR_RGB2BGR)
    ok, data = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
    if not ok:
        raise RuntimeError("OpenCV could not encode a progressive JPEG")
    return data.tobytes()


def huge_claim(seed: int = 0) -> bytes:
    """A progressive JPEG of about 1 KB whose frame header claims HUGE x HUGE x 3."""
    return with_frame_size(progressive_jpeg(seed=seed), HUGE, HUGE)


def unnamed_sampling(height: int = 64, width: int = 64, seed: int = 0) -> bytes:
    """A 4:4:4 JPEG whose luma sampling factors are edited to 1x4: simplejpeg's header reader
    raises KeyError on it (not a ValueError)."""
    rgb = np.ascontiguousarray(synthetic_rgb(height, width, seed))
    edited = bytearray(simplejpeg.encode_jpeg(rgb, colorsubsampling="444"))
    edited[frame_at(bytes(edited)) + 11] = 0x14  # component 1: H=1, V=4
    return bytes(edited)


def run_measured(script: str, *args: str, timeout: float = 120) -> tuple[str, float]:
    """Run `script` in a child Python; its stdout and its peak RSS in MB: VmHWM of its own
    address space, which it prints last on a line of its own (not ru_maxrss, which a child
    keeps across exec from the test process it was forked from)."""
    epilogue = (
        "\nfor _line in open('/proc/self/status'):\n"
        "    if _line.startswith('VmHWM:'):\n"
        "        print(int(_line.split()[1]) / 1024)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script + epilogue, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise AssertionError(f"the child failed ({done.returncode}):\n{done.stderr[-3000:]}")
    *lines, peak = done.stdout.strip().splitlines()
    return "\n".join(lines), float(peak)
