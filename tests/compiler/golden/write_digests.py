"""Write `digests.json` with the code of another commit: the golden builds' expected bytes.

    python -m tests.compiler.golden.write_digests COMMIT

checks COMMIT out in a temporary worktree, builds a wheel of it, unpacks it and runs this
folder's tests in write mode with the unpacked package first on the import path (the tests and
their inputs come from the working tree), so that every digest is what COMMIT's compiler wrote.
`commit_package` is that unpacked package, for other comparisons (benchmarks/builds/identical.py).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
WHERE = "import fastpack.compiler as c; print(c.__file__)"


def run(*command: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def short_sha(commit: str) -> str:
    return run("git", "rev-parse", "--short", commit)


@contextlib.contextmanager
def commit_package(commit: str) -> Iterator[Path]:
    """A directory holding COMMIT's fastpack, unpacked from a wheel built of it: put it first on
    PYTHONPATH (and run from outside the repository) to import that code."""
    with tempfile.TemporaryDirectory(prefix="fastpack-golden-") as tmp:
        work, wheels, lib = Path(tmp, "tree"), Path(tmp, "wheels"), Path(tmp, "lib")
        run("git", "worktree", "add", "--detach", str(work), commit)
        try:
            pip = (sys.executable, "-m", "pip", "wheel", "-q", "--no-deps")
            run(*pip, "--no-build-isolation", str(work), "-w", str(wheels))
        finally:
            run("git", "worktree", "remove", "--force", str(work))
        with zipfile.ZipFile(next(wheels.glob("fastpack-*.whl"))) as wheel:
            wheel.extractall(lib)
        env = {**os.environ, "PYTHONPATH": str(lib)}
        where = run(sys.executable, "-c", WHERE, cwd=Path(tmp), env=env)
        if not where.startswith(str(lib)):
            raise SystemExit(f"fastpack imported from {where}, not from {commit}'s wheel")
        yield lib


def write(commit: str) -> Path:
    with commit_package(commit) as lib, tempfile.TemporaryDirectory() as tmp:
        table = Path(tmp, "digests.json")
        env = {
            **os.environ,
            "PYTHONPATH": f"{lib}{os.pathsep}{REPO}",
            "FASTPACK_GOLDEN_WRITE": str(table),
        }
        # --import-mode=append keeps the unpacked wheel ahead of the working tree.
        pytest = (sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider")
        appended = ("--import-mode=append", "--rootdir", str(REPO), str(HERE))
        run(*pytest, *appended, cwd=Path(tmp), env=env)
        found = json.loads(table.read_text(encoding="utf-8"))
    out = HERE / "digests.json"
    document = {
        "commit": short_sha(commit),
        "cases": found["cases"],
        "note": "written by tests/compiler/golden/write_digests.py with this commit's code",
    }
    out.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("commit", help="the commit whose compiler writes the expected bytes")
    print(write(parser.parse_args().commit))


if __name__ == "__main__":
    main()
