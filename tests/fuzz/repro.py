"""Reproduce one fuzz case: `python -m tests.fuzz.repro TARGET SEED NUMBER [--save FILE]`.

Builds the template datasets in a temporary folder, makes the case as the fuzz run made it,
prints what it is, saves its bytes (a JPEG, an index, a manifest or a view file; a state as
JSON) where `--save` says, and runs it in a fresh worker process: the outcome is printed, and
the exit status is 1 for a failure.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from .cases import CaseMaker
from .datasets import build_templates
from .harness import Worker, memory_budget_kib
from .plan import TIMEOUT


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("target")
    parser.add_argument("seed", type=int)
    parser.add_argument("number", type=int)
    parser.add_argument("--save", type=Path, help="write the case's bytes (or state) here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="fastpack-fuzz-") as folder:
        templates = build_templates(Path(folder) / "templates")
        case = CaseMaker(templates, [args.target]).make(args.target, args.seed, args.number)
        print(f"{args.target} seed {args.seed} case {args.number}: {case.description}")
        if args.save is not None:
            payload = case.payload
            data = payload.get("data", payload.get("bytes"))
            if data is None:
                data = json.dumps(payload["state"], allow_nan=True).encode()
            args.save.write_bytes(data)
            print(f"saved {len(data)} bytes to {args.save}")
        worker = Worker(
            Path(folder) / "work", templates, budget_kib=memory_budget_kib(), timeout=TIMEOUT
        )
        try:
            outcome = worker.run(case.target, case.payload)
        finally:
            worker.close()
    print(f"{outcome.kind}: {outcome.detail}")
    print(f"{outcome.seconds:.3f} s, peak {outcome.peak_kib / 1024:.1f} MiB above the start")
    return 1 if outcome.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
