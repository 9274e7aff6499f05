"""What each fuzz target does with a case inside a worker process, and which outcomes pass.

A target's `run(payload, context)` returns `(kind, detail)` for an outcome that passes: "ok"
(pixels, a parsed file, an accepted state), "refused" (the named error the API documents, or
the build's `Reject`), "kept-undecodable" (kept by the build's decode check, then refused by the
reader's decode: noted, not a failure). It raises `Mismatch` where an oracle fails (pixels that
differ from a whole decode, a lossy transcode, an error that does not name what it must, a state
that should have been refused); anything else it raises is judged by `classify`: one of the
target's `allowed` errors is "refused", a MemoryError or an allocation failure is "memory", the
rest "traceback".
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import simplejpeg
from fastpack.compiler import PreparedImage, Reject, prepare_image
from fastpack.formats import (
    INDEX_NAME,
    MANIFEST_NAME,
    VIEWS_DIR,
    FastpackError,
    read_manifest,
    read_view_file,
)
from fastpack.reader import CenterCrop, Dataset, RandomResizedCrop
from fastpack.reader.image import crop_decode
from fastpack.reader.image.decode import Box, DecodeOptions, dct_shift, jpeg_size, scaled_window

from .datasets import VIEW_NAME, write_one_sample
from .jpeg_segments import frame_size

Payload = dict[str, Any]
Result = tuple[str, str]
COMPARE_PIXELS = 1 << 22  # decode twice to compare only images that claim at most this many
_BUFFER_LIMIT = 64 << 20  # bytes of output buffer given to the raw window decoder at most
_ALLOCATION_WORDS = ("insufficient memory (case 2)", "insufficient memory (case 4)",
                     "failed to allocate", "out of memory", "unable to allocate")  # fmt: skip


class Mismatch(Exception):
    """An oracle failed: the outcome was pixels or a named error, but the wrong ones."""


@dataclass
class Context:
    """A worker's state: its private folder, the template datasets, objects made once."""

    workdir: Path
    templates: dict[str, Path]
    made: dict[str, Any] = field(default_factory=dict)

    def copy_of(self, template: str, purpose: str) -> Path:
        """This worker's own copy of a template dataset (made on first use)."""
        key = f"copy:{purpose}:{template}"
        if key not in self.made:
            target = self.workdir / f"{purpose}-{template}"
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(self.templates[template], target)
            self.made[key] = target
        path: Path = self.made[key]
        return path


@dataclass(frozen=True)
class Target:
    run: Callable[[Payload, Context], Result]
    allowed: tuple[type[BaseException], ...]
    needs: str = ""  # "window", "baseline" or "torch": what must be installed


def extension(name: str) -> ModuleType | None:
    """A fastpack C extension ("window": the crop decoder, "baseline": the transcoder)."""
    module = {
        "window": "fastpack.reader.image._jpeg_crop",
        "baseline": "fastpack.compiler.images._jpeg_baseline",
    }[name]
    try:
        return importlib.import_module(module)
    except ImportError:
        return None


def classify(error: BaseException, allowed: tuple[type[BaseException], ...]) -> Result:
    """The outcome of a case that raised `error`."""
    text = f"{type(error).__name__}: {error}"
    if isinstance(error, MemoryError) or any(w in str(error).lower() for w in _ALLOCATION_WORDS):
        return "memory", text
    if isinstance(error, Mismatch):
        return "mismatch", str(error)
    if isinstance(error, allowed):
        return "refused", text
    return "traceback", text + _where(error)


def _where(error: BaseException) -> str:
    """` at module:line` of the innermost frame that raised `error` (a module name, so that
    the text is the same whichever folder the sources were imported from)."""
    tb = error.__traceback__
    if tb is None:
        return ""
    while tb.tb_next is not None:
        tb = tb.tb_next
    return f" at {tb.tb_frame.f_globals.get('__name__', '?')}:{tb.tb_lineno}"


def _claimed_pixels(data: bytes) -> int:
    height, width, _ = frame_size(data)
    return height * width


def _same_pixels(a: np.ndarray, b: np.ndarray, what: str) -> None:
    if a.shape != b.shape:
        raise Mismatch(f"{what}: shapes {a.shape} and {b.shape}")
    if not np.array_equal(a, b):
        diff = int(np.abs(a.astype(np.int16) - b.astype(np.int16)).max())
        count = int(np.count_nonzero(a != b))
        raise Mismatch(f"{what}: {count} values differ, by up to {diff} levels")


def _decode_or_none(data: bytes) -> np.ndarray | None:
    try:
        image: np.ndarray = simplejpeg.decode_jpeg(data, colorspace="RGB")
    except ValueError:
        return None
    return image


# -- the window decoder and its fallback -------------------------------------------------------


def run_window_c(payload: Payload, context: Context) -> Result:
    """The raw C call: pixels or a ValueError, and a result that fits the buffer."""
    ext = extension("window")
    assert ext is not None  # the worker skips targets whose extension is missing
    data, shift = payload["data"], payload["shift"]
    top, left, height, width = payload["window"]
    _, full_width, _ = frame_size(data)
    scaled_width = max(-(-full_width >> max(shift, 0)), 32)
    nbytes = min(max(height + 2, 1) * scaled_width * 3, _BUFFER_LIMIT)
    buffer = np.empty(nbytes, np.uint8)
    y0, x0, rows, columns, image_h, image_w, _ = ext.decode_window(
        data, shift, top, left, height, width, buffer,
        fastdct=payload["fastdct"], fastupsample=payload["fastupsample"],
    )  # fmt: skip
    if rows < 1 or columns < 1 or rows * columns * 3 > nbytes:
        raise Mismatch(f"block {rows} x {columns} for a buffer of {nbytes} bytes")
    if not (y0 >= 0 and x0 >= 0 and y0 + rows <= image_h and x0 + columns <= image_w):
        raise Mismatch(f"block at ({y0}, {x0}) of {rows} x {columns} in {image_h} x {image_w}")
    return "ok", f"{rows} x {columns}"


def _box(payload: Payload, size: tuple[int, int]) -> Box:
    """The payload's box (fractions of the image) in pixels: at least one pixel each way, and
    inside the image, as the transforms make their boxes."""
    ft, fl, fh, fw = payload["box"]
    height, width = size
    top, left = ft * height, fl * width
    box_height, box_width = max(fh * (height - top), 1.0), max(fw * (width - left), 1.0)
    top, left = min(top, height - box_height), min(left, width - box_width)
    return Box(top, left, box_height, box_width)


def _render(payload: Payload, window: bool) -> Result:
    data = payload["data"]
    out = np.empty((*payload["out"], 3), np.uint8)
    options = DecodeOptions(fastdct=payload["fastdct"], fastupsample=payload["fastupsample"])
    previous = crop_decode.use_window_decode(window)
    try:
        size = jpeg_size(data)
        box = _box(payload, size)
        shift = dct_shift(box.height, box.width, out.shape[0], out.shape[1])
        pixels = scaled_window(box, shift)
        crop_decode.render(data, size, shift, pixels, out, flip=payload["flip"], options=options)
        if window and crop_decode.window_decode_enabled():
            _compare_window(data, size, box, out.shape[:2], options)
    finally:
        crop_decode.use_window_decode(previous)
    return "ok", f"{size[0]} x {size[1]}"


def _compare_window(
    data: bytes, size: tuple[int, int], box: Box, out: tuple[int, ...], options: DecodeOptions
) -> None:
    """The window decode's pixels against the whole decode's, cut to the same window."""
    if size[0] * size[1] > COMPARE_PIXELS:
        return
    shift = dct_shift(box.height, box.width, out[0], out[1])
    window = scaled_window(box, shift)
    windowed = crop_decode.decode_window(data, size, shift, window, options).copy()
    crop_decode.use_window_decode(False)
    try:
        whole = crop_decode.decode_window(data, size, shift, window, options)
    except ValueError:
        return  # the whole decode refuses what the window decode read: not a pixel question
    _same_pixels(windowed, whole, f"window {window} at 1/{1 << shift} against the whole decode")


def run_render_window(payload: Payload, context: Context) -> Result:
    return _render(payload, window=True)


def run_render_fallback(payload: Payload, context: Context) -> Result:
    return _render(payload, window=False)


# -- transforms and Dataset --------------------------------------------------------------------


def _transform(payload: Payload) -> RandomResizedCrop | CenterCrop | None:
    kind, size = payload["transform"], payload["size"]
    if kind == "rrc":
        return RandomResizedCrop(size, max_upscale=payload["max_upscale"])
    if kind == "center":
        return CenterCrop(size, max_upscale=payload["max_upscale"])
    return None


def run_transform(payload: Payload, context: Context) -> Result:
    transform = _transform(payload)
    assert transform is not None
    image = transform(payload["data"], payload["draws"] if transform.draws else None)
    if image.shape != (*transform.output_shape, 3) or image.dtype != np.uint8:
        raise Mismatch(f"output {image.dtype} {image.shape}")
    return "ok", "pixels"


def run_dataset(payload: Payload, context: Context) -> Result:
    """A one-sample dataset of the case, read as `Dataset[0]` or as a batch of one: pixels or a
    FastpackError that names the sample."""
    if "manifest" not in context.made:
        context.made["manifest"] = read_manifest(context.templates["v1"] / MANIFEST_NAME)
    root = context.workdir / "one-sample"
    key = write_one_sample(root, payload["data"], context.made["manifest"])
    transform = _transform(payload)
    try:
        with Dataset(root, transform=transform, seed=payload["seed"]) as ds:
            image = ds.__getitems__([0])[0][0] if payload["batch"] else ds[0][0]
    except FastpackError as e:
        if key not in str(e) and "sample 0" not in str(e):
            raise Mismatch(f"{type(e).__name__} does not name the sample: {e}") from e
        raise
    if transform is not None and image.shape != (*transform.output_shape, 3):
        raise Mismatch(f"output {image.shape}")
    return "ok", f"{image.shape}"


# -- the build's image policy and the transcoder ----------------------------------------------


def _lossless(original: bytes, transcoded: bytes) -> None:
    if original == transcoded or _claimed_pixels(original) > COMPARE_PIXELS:
        return
    before, after = _decode_or_none(original), _decode_or_none(transcoded)
    if before is not None and after is not None:
        _same_pixels(before, after, "the baseline transcode against the original")


def _prepare(payload: Payload, check: str, baseline: bool) -> Result:
    data = payload["data"]
    result = prepare_image(data, check=check, baseline=baseline)  # type: ignore[arg-type]
    if isinstance(result, Reject):
        return "refused", f"Reject: {result.reason}"
    if not isinstance(result, PreparedImage) or not result.data:
        raise Mismatch(f"prepare_image gave {result!r:.100}")
    if baseline and not result.converted:
        _lossless(data, result.data)
    checked = (check == "decode" or baseline) and _claimed_pixels(result.data) <= COMPARE_PIXELS
    if checked and _decode_or_none(result.data) is None:
        return "kept-undecodable", "kept, and simplejpeg's RGB decode refuses it"
    return "ok", "converted" if result.converted else "kept"


def run_prepare_structure(payload: Payload, context: Context) -> Result:
    return _prepare(payload, "structure", baseline=False)


def run_prepare_decode(payload: Payload, context: Context) -> Result:
    return _prepare(payload, "decode", baseline=False)


def run_prepare_baseline(payload: Payload, context: Context) -> Result:
    return _prepare(payload, "structure", baseline=True)


def run_baseline_c(payload: Payload, context: Context) -> Result:
    ext = extension("baseline")
    assert ext is not None
    data = payload["data"]
    out = bytes(ext.to_baseline(data))
    _lossless(data, out)
    return "ok", f"{len(out)} bytes"


# -- the other files ---------------------------------------------------------------------------


def _read_everything(root: Path, view: str | None = None) -> int:
    """Open the dataset at `root` and read every field of every sample."""
    names = read_manifest(root / MANIFEST_NAME).schema.names
    with Dataset(root, fields=names, view=view) as ds:
        for i in range(len(ds)):
            ds[i]
        return len(ds)


def _named_by(error: BaseException, *words: str) -> None:
    if not any(w in str(error) for w in words):
        raise Mismatch(f"{type(error).__name__} names none of {words}: {error}")


def _file_case(payload: Payload, context: Context, purpose: str, name: str) -> Result:
    root = context.copy_of(payload["template"], purpose)
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(payload["bytes"])
    try:
        if purpose == "view":
            read_view_file(path)
            count = _read_everything(root, VIEW_NAME)
        else:
            count = _read_everything(root)
    except FastpackError as e:
        _named_by(e, str(root), VIEW_NAME)
        raise
    return "ok", f"{count} samples"


def run_index(payload: Payload, context: Context) -> Result:
    return _file_case(payload, context, "index", INDEX_NAME)


def run_manifest(payload: Payload, context: Context) -> Result:
    return _file_case(payload, context, "manifest", MANIFEST_NAME)


def run_view(payload: Payload, context: Context) -> Result:
    return _file_case(payload, context, "view", f"{VIEWS_DIR}/{VIEW_NAME}.fpview")


def _state_case(payload: Payload, load: Callable[[Any], None]) -> Result:
    refuse, names = payload["refuse"], payload["names"]
    try:
        load(payload["state"])
    except ValueError as e:
        if refuse is False:
            raise Mismatch(f"a valid state refused: {type(e).__name__}: {e}") from e
        if names:
            _named_by(e, *names)
        raise
    if refuse:
        raise Mismatch("accepted a state that a schema check refuses")
    return "ok", "accepted"


def run_state_map(payload: Payload, context: Context) -> Result:
    from tests.fuzz.states import loaders  # noqa: PLC0415 -- on use: imports torch, in the workers that need it

    made = context.made.setdefault("loaders", loaders(context.copy_of("v1", "states")))
    return _state_case(payload, made["state_map"].load_state_dict)


def run_state_streaming_loader(payload: Payload, context: Context) -> Result:
    from tests.fuzz.states import loaders  # noqa: PLC0415 -- on use: imports torch, in the workers that need it

    made = context.made.setdefault("loaders", loaders(context.copy_of("v1", "states")))
    return _state_case(payload, made["state_streaming_loader"].load_state_dict)


def run_state_streaming_dataset(payload: Payload, context: Context) -> Result:
    from tests.fuzz.states import loaders  # noqa: PLC0415 -- on use: imports torch, in the workers that need it

    made = context.made.setdefault("loaders", loaders(context.copy_of("v1", "states")))
    return _state_case(payload, made["state_streaming_dataset"].load_state_dict)


_NAMED = (FastpackError, ValueError)  # what a fastpack API may refuse bytes with
TARGETS: dict[str, Target] = {
    "window_c": Target(run_window_c, (ValueError,), "window"),
    "render_window": Target(run_render_window, _NAMED, "window"),
    "render_fallback": Target(run_render_fallback, _NAMED),
    "random_resized_crop": Target(run_transform, _NAMED),
    "center_crop": Target(run_transform, _NAMED),
    "dataset": Target(run_dataset, (FastpackError,)),
    "prepare_structure": Target(run_prepare_structure, ()),
    "prepare_decode": Target(run_prepare_decode, ()),
    "prepare_baseline": Target(run_prepare_baseline, (), "baseline"),
    "baseline_c": Target(run_baseline_c, (ValueError,), "baseline"),
    "index": Target(run_index, (FastpackError,)),
    "manifest": Target(run_manifest, (FastpackError,)),
    "view": Target(run_view, (FastpackError,)),
    "state_map": Target(run_state_map, (ValueError,), "torch"),
    "state_streaming_loader": Target(run_state_streaming_loader, (ValueError,), "torch"),
    "state_streaming_dataset": Target(run_state_streaming_dataset, (ValueError,)),
}
JPEG_TARGETS = tuple(list(TARGETS)[:10])
FILE_TARGETS = tuple(list(TARGETS)[10:])


def _abort(payload: Payload, context: Context) -> Result:
    os.abort()


def _sleep(payload: Payload, context: Context) -> Result:
    time.sleep(payload["seconds"])
    return "ok", "slept"


def _allocate(payload: Payload, context: Context) -> Result:
    block = np.ones(payload["bytes"], np.uint8)  # touched: resident
    return "ok", f"{block.size} bytes"


def _raise(payload: Payload, context: Context) -> Result:
    raise {"KeyError": KeyError, "ValueError": ValueError}[payload["error"]](payload["text"])


# The harness's own checks: a case that kills, hangs, takes memory or raises the wrong error.
TARGETS.update(
    {
        "selftest_abort": Target(_abort, ()),
        "selftest_sleep": Target(_sleep, ()),
        "selftest_allocate": Target(_allocate, ()),
        "selftest_raise": Target(_raise, (ValueError,)),
    }
)


def available(target: str) -> bool:
    """Whether what `target` needs is installed here."""
    needs = TARGETS[target].needs
    if needs == "torch":
        return importlib.util.find_spec("torch") is not None
    return not needs or extension(needs) is not None
