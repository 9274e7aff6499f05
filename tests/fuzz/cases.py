"""Fuzz cases: `CaseMaker.make(target, seed, number)` is a pure function of its arguments (and of
the template datasets, which are built the same way every time), so that a failure's
`(target, seed, number)` reproduces it (`python -m tests.fuzz.repro`)."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from fastpack.formats import INDEX_NAME, MANIFEST_NAME, VIEWS_DIR
from fastpack.reader import RandomResizedCrop

from .datasets import VIEW_NAME
from .file_mutators import (
    StateSchema,
    mutate_index,
    mutate_manifest,
    mutate_state,
    mutate_view,
)
from .jpeg_mutator import JpegMutator
from .jpeg_segments import frame_size

Rng = np.random.Generator
_HUGE_ARGUMENTS = (0, -1, 2**31, 2**62, 2**63 - 1, -(2**63))  # C longs at their limits


@dataclass(frozen=True)
class Case:
    target: str
    number: int
    payload: dict[str, Any]
    description: str


def case_rng(seed: int, target: str, number: int) -> Rng:
    """The generator of case `number` of `target` under `seed`, independent of every other."""
    return np.random.default_rng([seed, zlib.crc32(target.encode()), number])


def _flags(rng: Rng) -> dict[str, bool]:
    return {"fastdct": bool(rng.random() < 0.3), "fastupsample": bool(rng.random() < 0.3)}


def _window_arguments(data: bytes, rng: Rng) -> dict[str, Any]:
    height, width, _ = frame_size(data)
    shift = int(rng.choice([0, 1, 2, 3])) if rng.random() < 0.97 else int(rng.choice([-1, 4]))
    sh, sw = max(-(-height >> max(shift, 0)), 1), max(-(-width >> max(shift, 0)), 1)
    window = [
        int(rng.integers(0, sh + 1)),
        int(rng.integers(0, sw + 1)),
        int(rng.integers(1, sh + 1)),
        int(rng.integers(1, sw + 1)),
    ]
    if rng.random() < 0.05:
        window[int(rng.integers(4))] = int(rng.choice(_HUGE_ARGUMENTS))
    return {"shift": shift, "window": window, **_flags(rng)}


def _render_arguments(rng: Rng) -> dict[str, Any]:
    box = [float(rng.uniform(0, 0.9)), float(rng.uniform(0, 0.9))]
    box += [float(rng.uniform(0.05, 1)), float(rng.uniform(0.05, 1))]
    out = [int(rng.integers(8, 257)), int(rng.integers(8, 257))]
    return {"box": box, "out": out, "flip": bool(rng.random() < 0.5), **_flags(rng)}


def _transform_arguments(rng: Rng, kind: str) -> dict[str, Any]:
    return {
        "transform": kind,
        "size": int(rng.choice([16, 64, 224])),
        "max_upscale": float(rng.choice([1.0, 2.0])),
        "draws": rng.random(RandomResizedCrop.draws).tolist(),
    }


class CaseMaker:
    """Makes the cases of every target from the corpus and the template datasets."""

    def __init__(self, templates: Mapping[str, Path], targets: Iterable[str] = ()) -> None:
        self.jpegs = JpegMutator()
        self.files = {
            (kind, name): (templates[name] / path).read_bytes()
            for name in templates
            for kind, path in (
                ("index", INDEX_NAME),
                ("manifest", MANIFEST_NAME),
                ("view", f"{VIEWS_DIR}/{VIEW_NAME}.fpview"),
            )
            if (templates[name] / path).is_file()
        }
        self.states: dict[str, dict[str, Any]] = {}
        self.schemas: dict[str, StateSchema] = {}
        if any(t.startswith("state_") for t in targets):
            from .states import schemas, valid_states  # noqa: PLC0415 -- on use: imports torch, in the workers that need it

            self.states, self.schemas = valid_states(templates["v1"]), schemas(templates["v1"])

    def make(self, target: str, seed: int, number: int) -> Case:
        rng = case_rng(seed, target, number)
        if target.startswith("state_"):
            return self._state(target, number, rng)
        if target in ("index", "manifest", "view"):
            return self._file(target, number, rng)
        jpeg = self.jpegs.case(rng)
        payload: dict[str, Any] = {"data": jpeg.data}
        if target == "window_c":
            payload |= _window_arguments(jpeg.data, rng)
        elif target.startswith("render_"):
            payload |= _render_arguments(rng)
        elif target == "random_resized_crop":
            payload |= _transform_arguments(rng, "rrc")
        elif target == "center_crop":
            payload |= _transform_arguments(rng, "center")
        elif target == "dataset":
            kind = str(rng.choice(["rrc", "center", "none"]))
            payload |= _transform_arguments(rng, kind) | {
                "seed": int(rng.integers(1000)),
                "batch": bool(rng.random() < 0.5),
                "max_upscale": 1.0,
            }
        extra = {k: v for k, v in payload.items() if k not in ("data", "draws")}
        return Case(target, number, payload, f"{jpeg.describe()} {extra}")

    def _file(self, target: str, number: int, rng: Rng) -> Case:
        names = sorted(name for kind, name in self.files if kind == target)
        template = names[int(rng.integers(len(names)))]
        original = self.files[(target, template)]
        mutate = {"index": mutate_index, "manifest": mutate_manifest, "view": mutate_view}[target]
        data, text = mutate(original, rng)
        return Case(target, number, {"template": template, "bytes": data}, f"{template}: {text}")

    def _state(self, target: str, number: int, rng: Rng) -> Case:
        schema = self.schemas[target]
        case = mutate_state(self.states[target], schema, rng)
        names = schema.names(case.field) if case.field else ()
        payload = {"state": case.state, "refuse": case.refuse, "names": names}
        expected = {True: "must be refused", None: "either", False: "must be accepted"}
        return Case(target, number, payload, f"{case.text} ({expected[case.refuse]})")
