"""`FUZZ.md` from the raw JSON of one or more runs of `fuzz_run` (the newest first)."""

from __future__ import annotations

from typing import Any

_FAILURE_KINDS = ("signal", "exit", "hang", "memory", "traceback", "mismatch")

_INTRO = """\
# Fuzzing the decoders and parsers

Every decoder and parser that reads bytes from outside, fed seeded mutations of real inputs,
each case in a long-lived child process (`tests/fuzz/`, run by `benchmarks/fuzz/fuzz_run.py`).
A case passes when it ends as pixels (a parsed file, an accepted state) or as the named error
its API documents; it fails on a signal, a hang, peak resident memory over the budget, a
traceback (any other exception) or a wrong answer. The tests run the same targets, mutators
and seed at 12,000 cases (about 30 s on 2 cores; `FASTPACK_FUZZ_CASES` scales them).

- **JPEG targets** start from twelve small JPEGs made in the run (baseline 4:4:4, 4:2:2, 4:2:0,
  greyscale; progressive 4:2:0, 4:4:4, 4:1:1, 4:4:0, greyscale; restart markers; EXIF, ICC and
  comment segments) and apply up to three structure-aware mutations (frame size, sampling
  factors, components, precision, frame type; DQT, DHT, DRI, scan headers, point transforms;
  restart markers; scans dropped, repeated up to 800 times, reordered or cut; inserted
  markers, big APPn segments, wrong lengths, segments spliced from another file; entropy data),
  then byte flips and truncation. `window_c` is the window decoder's C call
  (`_jpeg_crop.decode_window`, random windows, arguments up to the C long's limits);
  `render_window` and `render_fallback` are `crop_decode.render` with the window decode on
  (its pixels compared with the whole decode's) and off; `random_resized_crop`, `center_crop`
  the transforms; `dataset` a one-sample dataset of the case read by `Dataset` (the error must
  name the sample); `prepare_structure`, `prepare_decode`, `prepare_baseline` the build's
  image policy (`prepare_image` must return the image or a `Reject`; a transcode must decode to
  the original's pixels); `baseline_c` the transcoder's C call (the same check).
- **File targets** mutate a built dataset's index (header, section table, contents, length),
  manifest (a JSON value of another type or at a boundary, a key removed or added, text bytes)
  and view file (preamble, header, bitmap, frame, with checksums recomputed or not), then open
  the dataset and read every field of every sample; the error must be a `FastpackError` that
  names the dataset. **State targets** give `load_state_dict` of the map-style loader, the
  streaming loader and `StreamingDataset` one JSON edit of a state they saved: a field of the
  wrong type, out of range or missing must be refused with a `ValueError` naming it.
- **Memory**: each case's peak resident memory above the worker's before it (VmHWM, reset per
  case), against the budget: what a decode within the default pixel budget takes
  (formats/image_header.py: 5 bytes per sample of its 2**28 samples) plus 256 MiB. The address
  space is capped 512 MiB above that, so that a case asking for more fails at once.

Reproduce one case: `python -m tests.fuzz.repro TARGET SEED NUMBER --save FILE`. Launch the
long run: `python -m benchmarks.fuzz.fuzz_run --cases 100000 --workers 16`.
"""


def _row(name: str, t: dict[str, Any]) -> str:
    outcomes = t["outcomes"]
    failed = sum(outcomes.get(k, 0) for k in _FAILURE_KINDS)
    kinds = ", ".join(f"{k} {outcomes[k]}" for k in _FAILURE_KINDS if outcomes.get(k))
    errors = ", ".join(f"{k} {v}" for k, v in list(t["refusals_by_error"].items())[:3])
    return (
        f"| `{name}` | {t['cases']:,} | {outcomes.get('ok', 0):,} | "
        f"{outcomes.get('refused', 0):,} | {outcomes.get('kept-undecodable', 0):,} | "
        f"{failed:,}{f' ({kinds})' if kinds else ''} | {t['mean_case_ms']} | "
        f"{t['slowest_case']['seconds']} | {t['peak_case_mib']} | {errors} |"
    )


def _run(run: dict[str, Any]) -> list[str]:
    m = run["machine"]
    rate = run["cases"] / max(run["wall_seconds"], 1e-9)
    lines = [
        f"## {run['label']}: {run['cases']:,} cases, seed {run['seed']}",
        "",
        f"{run['date']}, commit {run['commit']} (`{run['command']}`). {m['cpu']}, {m['cores']} "
        f"cores, {m['ram_gib']} GiB; load {run['load_before']} before, {run['load_after']} "
        f"after. {run['workers']} worker processes, {run['wall_seconds']:,} s "
        f"({rate:.0f} cases/s), {run['worker_starts']} worker starts; memory budget "
        f"{run['memory_budget_mib']} MiB per case, timeout {run['timeout_s']} s; peak resident "
        f"memory of the whole process tree {run['process_tree_peak_rss_mib']:,} MiB.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in run["versions"].items()) + ".",
        "",
        "| target | cases | ok | refused | kept, undecodable | failed | mean ms | slowest s "
        "| peak MiB | refused with |",
        "|---|--:|--:|--:|--:|---|--:|--:|--:|---|",
        *(_row(name, t) for name, t in run["targets"].items()),
        "",
    ]
    groups = run["failure_groups"]
    if not groups:
        return [*lines, "No case failed.", ""]
    lines += [f"### Failures: {sum(g['count'] for g in groups):,} in {len(groups)} groups", ""]
    for g in groups:
        first = g["first"]
        lines += [
            f"- **{g['target']}, {g['kind']}** x{g['count']}: {first['detail'][:300]}",
            f"  first case {first['number']}: {first['case'][:300]}",
            f"  (`{first['reproduce']}`)",
        ]
    return [*lines, ""]


def render(runs: list[dict[str, Any]], reading: str = "") -> str:
    """The page: what is fuzzed and how, `reading` (what the runs found), then each run."""
    lines = [_INTRO]
    if reading:
        lines += ["## Reading", "", reading.strip(), ""]
    for run in runs:
        lines += _run(run)
    return "\n".join(lines).rstrip() + "\n"
