"""The order of an epoch over a dataset, a view or a mix, and the loaders' resumable state."""
