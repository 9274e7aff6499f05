"""Reader benchmarks: fastpack against other image loaders on one ImageFolder corpus.

Not part of the installed package; run from the repository root with
`python -m benchmarks.readers.reader_bench` (see `benchmarks/README.md`).
"""

__all__: list[str] = []
