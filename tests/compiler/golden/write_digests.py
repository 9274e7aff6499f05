"""Write `digests.json` with the code of another commit: the golden builds' expected bytes.

    python -m tests.compiler.golden.write_digests COMMIT

checks COMMIT out in a temporary worktree, builds a wheel of it, unpacks it and runs this
folder's tests in write mode with the unpacked package first on the import path (the tests and
their inputs come from the working tree), so that every digest is what COMMIT's compiler wrote.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]


def run(*command: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> None:
    subprocess.run(command, cwd=cwd, env=env, check=True)


def write(commit: str) -> Path:
    with tempfile.TemporaryDirectory(prefix="fastpack-golden-") as tmp:
        work, wheels, lib = Path(tmp, "tree"), Path(tmp, "wheels"), Path(tmp, "lib")
        run("git", "worktree", "add", "--detach", str(work), commit)
        try:
            run(
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "-q",
                "--no-deps",
                "--no-build-isolation",
                str(work),
                "-w",
                str(wheels),
            )
            with zipfile.ZipFile(next(wheels.glob("fastpack-*.whl"))) as wheel:
                wheel.extractall(lib)
            table = Path(tmp, "digests.json")
            env = {
                **os.environ,
                "PYTHONPATH": f"{lib}{os.pathsep}{REPO}",
                "FASTPACK_GOLDEN_WRITE": str(table),
            }
            where = subprocess.run(
                [sys.executable, "-c", "import fastpack.compiler as c; print(c.__file__)"],
                cwd=tmp,
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            if not where.startswith(str(lib)):
                raise SystemExit(f"fastpack imported from {where}, not from {commit}'s wheel")
            # --import-mode=append keeps the unpacked wheel ahead of the working tree.
            run(
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "--import-mode=append",
                "--rootdir",
                str(REPO),
                str(HERE),
                cwd=Path(tmp),
                env=env,
            )
            sha = subprocess.run(
                ["git", "rev-parse", "--short", commit],
                cwd=REPO,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            found = json.loads(table.read_text(encoding="utf-8"))
        finally:
            run("git", "worktree", "remove", "--force", str(work))
    out = HERE / "digests.json"
    document = {
        "commit": sha,
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
