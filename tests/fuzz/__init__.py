"""Seeded fuzzing of every decoder and parser that reads untrusted bytes.

Each case runs in a long-lived child process (`harness`), so that a crash, a hang or a blown
memory budget is recorded as that case's outcome instead of ending the run. JPEG cases are
structure-aware mutations of real JPEGs (`jpeg_mutator`); index, manifest, view and loader-state
cases mutate real files and states (`file_mutators`). `campaign` runs a seeded set of cases over
worker processes; the tests run 12,000 cases, `benchmarks/fuzz/fuzz_run.py` the long run.
"""
