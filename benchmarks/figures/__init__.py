"""The figures of the README and the guide, rendered from the benchmarks' committed raw JSON.

`python -m benchmarks.figures` rewrites every block between `<!-- figure: NAME -->` and
`<!-- /figure: NAME -->` in README.md and docs/*.md, and the pictures in docs/img/;
`--check` only says what differs; `--status` lists each figure's source, commit and how many
commits that change the code it measures came after it. tests/docs/test_figures.py fails on any
difference, on a figure from a tree with uncommitted changes, and on a stale one.
"""
