"""Reading the versions of a dataset grown by appends."""
