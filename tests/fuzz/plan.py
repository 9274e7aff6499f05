"""How many cases each target gets, and the run's settings from the environment.

`FASTPACK_FUZZ_CASES` (default `CI_CASES`) is the total, shared out by `WEIGHTS`;
`FASTPACK_FUZZ_WORKERS` (default 2) the worker processes; `FASTPACK_FUZZ_SEED` the seed.
`benchmarks/fuzz/fuzz_run.py` runs the same plan at 100,000 cases and more.
"""

from __future__ import annotations

import os

SEED = 20_261_127
CI_CASES = 12_000  # about 30 s on 2 idle cores; the whole of tests/fuzz within 2 minutes
TIMEOUT = 20.0  # seconds before a case counts as a hang
WEIGHTS = {  # JPEG decoders get most: their inputs are the wildest
    "window_c": 8,
    "render_window": 8,
    "render_fallback": 6,
    "random_resized_crop": 8,
    "center_crop": 6,
    "dataset": 6,
    "prepare_structure": 6,
    "prepare_decode": 6,
    "prepare_baseline": 6,
    "baseline_c": 8,
    "index": 5,
    "manifest": 5,
    "view": 4,
    "state_map": 3,
    "state_streaming_loader": 3,
    "state_streaming_dataset": 3,
}


def plan(total: int, targets: list[str] | None = None) -> dict[str, int]:
    """`total` cases shared out over `targets` (default all) by weight, exactly (the largest
    remainders get the cases that rounding down leaves), at least 1 each."""
    chosen = {t: WEIGHTS[t] for t in (targets or list(WEIGHTS))}
    whole = sum(chosen.values())
    shares = {t: total * w / whole for t, w in chosen.items()}
    counts = {t: int(share) for t, share in shares.items()}
    by_remainder = sorted(chosen, key=lambda t: counts[t] - shares[t])
    for t in by_remainder[: total - sum(counts.values())]:
        counts[t] += 1
    return {t: max(1, n) for t, n in counts.items()}


def settings() -> tuple[int, int, int]:
    """`(cases, workers, seed)` from the environment."""
    cases = int(os.environ.get("FASTPACK_FUZZ_CASES", CI_CASES))
    workers = int(os.environ.get("FASTPACK_FUZZ_WORKERS", min(2, os.cpu_count() or 1)))
    seed = int(os.environ.get("FASTPACK_FUZZ_SEED", SEED))
    return cases, workers, seed
