"""Reader benchmarks: fastpack against other loaders, decode and crop quality, per-step costs.

Run each script from the repository root as `python -m benchmarks.readers.<script>`;
`benchmarks/README.md` lists them."""

__all__: list[str] = []
