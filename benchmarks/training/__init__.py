"""Training benchmarks: loaders feeding a real training step, and how long the step waits.

Run each script from the repository root as `python -m benchmarks.training.<script>`;
`benchmarks/README.md` lists them."""

__all__: list[str] = []
