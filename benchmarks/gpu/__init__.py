"""GPU benchmarks: DALI decoding, feed and memory, mask decoding.

Run each script from the repository root as `python -m benchmarks.gpu.<script>`;
`benchmarks/README.md` lists them."""

__all__: list[str] = []
