"""What a target's directory holds before a build, and whether the build may go on there.

fastpack never deletes files it did not write: a directory that holds anything but an
interrupted build (with `resume`) or its own finished dataset is refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any

from fastpack.formats import MANIFEST_NAME, read_manifest

from ..build_dir import BUILD_DIR, temp_path
from ..errors import BuildDirError, BuildError
from ..options import RECORDED_WHERE_SET

OPTIONS_NAME = "options.json"
# Builds made before the `check` option existed decoded every JPEG they kept.
_RECORDED_BEFORE_CHECK = {"check": "decode"}
_ADVICE = "pass --resume (resume=True) to finish it, or choose an empty directory"


class OutState(Enum):
    FRESH = "fresh"  # nothing there yet (or a build killed before it recorded its options)
    RESUME = "resume"  # an interrupted build with the same options
    COMPLETE = "complete"  # a finished dataset built with the same options


def _differences(stored: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    """The options that differ: those `wanted` gives, and those recorded only where set that
    `stored` has and `wanted` lacks (a resume without `--baseline` of a build with it)."""
    dropped = sorted(k for k in stored.keys() & RECORDED_WHERE_SET if k not in wanted)
    return [
        f"{k}={stored.get(k)!r} (now {wanted.get(k)!r})"
        for k in [*wanted, *dropped]
        if stored.get(k) != wanted.get(k)
    ]


def check_same(
    out: Path | str, what: str, stored: Mapping[str, Any], wanted: Mapping[str, Any]
) -> None:
    differences = _differences({**_RECORDED_BEFORE_CHECK, **stored}, wanted)
    if differences:
        raise BuildError(
            f"{out}: cannot resume: {what} was made with {', '.join(differences)}; resume with "
            "the same source and options, or choose an empty directory"
        )


def check_out_dir(out: Path, *, resume: bool, fingerprint: Mapping[str, Any]) -> OutState:
    """Classify `out`, raising BuildError where the build must not touch it.

    `fingerprint` holds the source and the output-shaping options; a resume needs them equal."""
    if not out.exists():
        return OutState.FRESH
    if not out.is_dir():
        raise BuildError(f"{out}: exists and is not a directory")
    build_dir, manifest = out / BUILD_DIR, out / MANIFEST_NAME
    if build_dir.exists():
        if not resume:
            raise BuildError(f"{out}: holds an interrupted build; {_ADVICE}")
        options = build_dir / OPTIONS_NAME
        try:
            stored = json.loads(options.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return OutState.FRESH
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise BuildDirError(
                f"{options}: unreadable build options ({e}); remove {out} and build again"
            ) from e
        if not isinstance(stored, dict):
            raise BuildDirError(
                f"{options}: unreadable build options (not a JSON object); remove {out} and "
                "build again"
            )
        check_same(out, "the interrupted build", stored, fingerprint)
        return OutState.RESUME
    if manifest.exists():
        if not resume:
            raise BuildError(
                f"{out}: already holds a fastpack dataset; choose an empty directory, or pass "
                "--resume (resume=True) to keep it as it is if it was built with these options"
            )
        wanted = {k: v for k, v in fingerprint.items() if k != "source"}
        check_same(out, "the dataset there", read_manifest(manifest).build, wanted)
        return OutState.COMPLETE
    if any(os.scandir(out)):
        raise BuildError(
            f"{out}: is not empty and holds no fastpack build; choose an empty directory "
            "(fastpack does not delete files it did not write)"
        )
    return OutState.FRESH


def start_build_dir(out: Path, fingerprint: Mapping[str, Any]) -> Path:
    """Create `<out>/.fastpack-build/` and record the build's options in it."""
    build_dir = out / BUILD_DIR
    build_dir.mkdir(parents=True, exist_ok=True)
    tmp = temp_path(build_dir / OPTIONS_NAME)
    tmp.write_text(json.dumps(dict(fingerprint), sort_keys=True), encoding="utf-8")
    os.replace(tmp, build_dir / OPTIONS_NAME)
    return build_dir
