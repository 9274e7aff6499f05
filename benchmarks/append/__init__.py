"""Appends: what growing a dataset by a small fraction costs against building it whole, the
bytes of the earlier versions rewritten (none), and the time to open each version."""
