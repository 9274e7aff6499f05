"""The output directory: what may be built there, and the end of a build (index, rejects,
manifest last)."""

from .assemble import write_dataset_manifest
from .out_dir import OutState, check_out_dir, start_build_dir

__all__ = ["OutState", "check_out_dir", "start_build_dir", "write_dataset_manifest"]
