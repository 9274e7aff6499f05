"""Build benchmarks: build speed against peers, at scale (memory, Dask), TFRecord conversion.

Run each script from the repository root as `python -m benchmarks.builds.<script>`;
`benchmarks/README.md` lists them."""

__all__: list[str] = []
