"""Entry point of tests/docs/test_code_blocks.py: run one page's blocks in order, in a directory.

`python -m tests.docs._run_page PAGE DIR`: python blocks share one namespace (named `__main__`,
as a script's is), bash blocks run with `set -euo pipefail`; the first failure stops the page
and names its block. `pip` is a no-op in bash blocks: the tests run in the environment that the
page's install command makes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import traceback
from pathlib import Path

from tests.docs.code_blocks import Block, blocks

BASH_PREAMBLE = "set -euo pipefail\npip() { :; }\n"


def run(block: Block, namespace: dict[str, object], where: Path) -> None:
    if block.file is not None:
        (where / block.file).parent.mkdir(parents=True, exist_ok=True)
        (where / block.file).write_text(block.text, "utf-8")
    elif block.language == "python":
        code = compile(block.text, block.where, "exec")
        exec(code, namespace)  # the guide's own code, run as a reader would run it
    else:
        subprocess.run(["bash", "-c", BASH_PREAMBLE + block.text], cwd=where, check=True)


def main() -> int:
    page, where = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    os.chdir(where)
    bin_dir = str(Path(sys.executable).parent)
    os.environ["PATH"] = bin_dir + os.pathsep + os.environ.get("PATH", "")
    namespace: dict[str, object] = {"__name__": "__main__"}
    for block in blocks(page):
        if not (block.runs or block.file is not None):
            continue
        print(f"--- {block.where} ({block.language or block.file})", flush=True)
        try:
            run(block, namespace, where)
        except Exception:  # any failure is the page's, reported with its block
            traceback.print_exc()
            print(f"FAILED: the block at {block.where}:\n{block.text}", flush=True)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
