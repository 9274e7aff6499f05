"""A damaged build directory (`.fastpack-build/`) met on resume raises `BuildDirError`, a
`FastpackError` naming the damaged file, instead of a JSON or numpy error."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastpack.compiler import BuildError, BuildOptions, build
from fastpack.compiler.build_dir import BUILD_DIR
from fastpack.compiler.errors import BuildDirError
from fastpack.compiler.planning import Plan
from fastpack.formats import FastpackError

from tests.compiler.test_resume import interrupted

RESUME = BuildOptions(workers=1, shard_size=1, resume=True, progress=False)


@pytest.mark.parametrize(
    ("name", "content", "workers", "message"),
    [
        ("plan.json", b"{not json", 1, r"plan\.json: unreadable build plan \(Expecting"),
        ("plan.json", b'{"kind": "folder"}', 1, r"plan\.json: build plan with the wrong keys"),
        ("plan.label", b"\0" * 8, 1, r"plan\.label: build plan column cut short"),
        ("plan.label", b"\0" * 8, 2, r"plan\.label: build plan column cut short"),
        ("000001.shard.json", b"[1, 2]", 1, r"000001\.shard\.json: unreadable shard record"),
        ("000002.part.npz", b"not a zip", 1, r"000002\.part\.npz: unreadable index part"),
        ("options.json", b"{half", 1, r"options\.json: unreadable build options"),
        ("options.json", b"[1]", 1, r"options\.json: unreadable build options \(not a JSON"),
    ],
)
def test_damaged_build_file(
    tmp_path: Path, name: str, content: bytes, workers: int, message: str
) -> None:
    source, out = interrupted(tmp_path)
    (out / BUILD_DIR / name).write_bytes(content)
    with pytest.raises(BuildDirError, match=message) as e:
        build(source, out, BuildOptions(workers=workers, shard_size=1, resume=True, progress=False))
    assert isinstance(e.value, BuildError)
    assert isinstance(e.value, FastpackError)
    assert f"remove {out} and build again" in str(e.value)


def test_missing_plan_column(tmp_path: Path) -> None:
    source, out = interrupted(tmp_path)
    (out / BUILD_DIR / "plan.size").unlink()
    with pytest.raises(BuildDirError, match=r"plan\.size: build plan column missing"):
        build(source, out, RESUME)


def test_no_plan(tmp_path: Path) -> None:
    with pytest.raises(BuildDirError, match=rf"{tmp_path}/plan\.json: no build plan"):
        Plan(tmp_path)
