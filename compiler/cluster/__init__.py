"""Builds beyond one machine: shard tasks on a Dask cluster, or one node's share of the shard
jobs (`num_nodes`, `node_rank`), written to a shared directory or an object store."""
