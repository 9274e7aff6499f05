"""Start-up benchmarks: time and memory to the first batch, local and streamed; view building.

Run each script from the repository root as `python -m benchmarks.startup.<script>`;
`benchmarks/README.md` lists them."""

__all__: list[str] = []
