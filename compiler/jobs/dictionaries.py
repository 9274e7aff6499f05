"""The zstd dictionaries of a build (formats/SPEC.md section 2.2), trained once the plan is
written and before the shard jobs run.

For each field the build schema asks one for: up to `SAMPLE_ROWS` rows spread evenly over the
plan, their values encoded as members (before compression; rows whose value is absent or does
not fit are skipped), trained into a dictionary of at most `size` bytes, written atomically to
`<out>/dicts/<field>.zdict`. Deterministic: the same plan gives the same bytes. The outcome is
recorded in the build directory, so that a resume reuses it. Too few samples train no
dictionary: the field's frames are then compressed without one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
from fastpack.formats import FieldValueError, Schema, Zstd, encode_value
from fastpack.formats.field_codec import train_dictionary
from fastpack.formats.schema import Dictionary, dictionary_name

from ..build_dir import BUILD_DIR, temp_path
from ..errors import BuildDirError
from ..planning.plan_store import Plan
from ..sources.sample_fields import unpack_fields
from .field_values import parse_cell, resolve
from .inputs import InputReader

SAMPLE_ROWS = 2000
STATE_NAME = "dictionaries.json"

Trained = Mapping[str, Dictionary | None]  # field -> its dictionary, None: too few samples


def sample_rows(rows: int, wanted: int = SAMPLE_ROWS) -> np.ndarray[Any, np.dtype[np.int64]]:
    """Up to `wanted` input rows spread evenly over `rows`, in order."""
    count = min(rows, wanted)
    return (np.arange(count, dtype=np.int64) * rows) // max(count, 1)


def _training_samples(plan: Plan, schema: Schema, names: tuple[str, ...]) -> dict[str, list[bytes]]:
    """Each field's member bytes (before compression) at the sampled rows."""
    samples: dict[str, list[bytes]] = {name: [] for name in names}
    rows = sample_rows(plan.meta.num_inputs)
    with InputReader(plan.meta) as reader:
        for packed in plan.fields(rows):
            values = unpack_fields(packed)
            for name in names:
                value = values.get(name)
                if value is None:
                    continue
                try:
                    value = resolve(value, reader)
                    if plan.meta.text_cells and isinstance(value, str):
                        value = parse_cell(schema[name], value)
                    samples[name].append(encode_value(schema[name], value))
                except FieldValueError:
                    continue  # the shard job rejects this sample
    return samples


def _write(out: Path, name: str, data: bytes) -> Dictionary:
    relative = dictionary_name(name)
    path = out / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(path)
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return Dictionary(name=relative, bytes=len(data), sha256=hashlib.sha256(data).hexdigest())


def _read_state(path: Path) -> dict[str, Dictionary | None] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {k: None if d is None else Dictionary(**d) for k, d in data.items()}
    except FileNotFoundError:
        return None
    except (ValueError, TypeError, AttributeError) as e:
        raise BuildDirError(
            f"{path}: unreadable dictionary record ({e!r}); the build directory is damaged: "
            f"remove {path.parent.parent} and build again"
        ) from e


def _write_state(path: Path, trained: Trained) -> None:
    data = {k: None if d is None else dataclasses.asdict(d) for k, d in trained.items()}
    tmp = temp_path(path)
    tmp.write_text(json.dumps(data, sort_keys=True), encoding="utf-8")
    os.replace(tmp, path)


def train_dictionaries(out: Path, plan: Plan, size: int) -> Trained:
    """The dictionaries of the plan's `train` fields: those recorded by an earlier run of this
    build, else trained now (and recorded)."""
    names = plan.meta.train
    if not names:
        return {}
    state = out / BUILD_DIR / STATE_NAME
    trained = _read_state(state)
    if trained is None:
        samples = _training_samples(plan, plan.meta.field_schema(), names)
        trained = {}
        for name in names:
            data = train_dictionary(samples[name], size)
            trained[name] = None if data is None else _write(out, name, data)
        _write_state(state, trained)
    return trained


def with_dictionaries(schema: Schema, trained: Trained) -> Schema:
    """`schema` whose trained fields name their dictionaries."""
    specs = []
    for spec in schema.fields:
        d = trained.get(spec.name)
        zstd = spec.zstd
        specs.append(
            dataclasses.replace(spec, zstd=Zstd(level=zstd.level, dictionary=d))
            if d is not None and zstd is not None
            else spec
        )
    return Schema(tuple(specs))


def load_dictionaries(out: Path, schema: Schema) -> dict[str, bytes]:
    """The dictionaries `schema` names, read from the output directory and checked."""
    found = {}
    for spec in schema.fields:
        d = spec.zstd.dictionary if spec.zstd is not None else None
        if d is None:
            continue
        path = out / d.name
        try:
            data = path.read_bytes()
        except FileNotFoundError as e:
            raise BuildDirError(
                f"{path}: zstd dictionary of field {spec.name!r} missing; remove {out} and "
                "build again"
            ) from e
        if hashlib.sha256(data).hexdigest() != d.sha256:
            raise BuildDirError(
                f"{path}: zstd dictionary of field {spec.name!r} changed since it was trained; "
                f"remove {out} and build again"
            )
        found[spec.name] = data
    return found
