"""Streaming benchmarks: S3 reads and clients, shared file systems, fetch CPU.

Run each script from the repository root as `python -m benchmarks.streaming.<script>`;
`benchmarks/README.md` lists them."""

__all__: list[str] = []
