"""Field benchmarks: non-image fields (text, JSON, labels) in builds and reads; zstd on text.

Run each script from the repository root as `python -m benchmarks.fields.<script>`;
`benchmarks/README.md` lists them."""

__all__: list[str] = []
