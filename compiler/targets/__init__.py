"""Targets: where a build's dataset goes, and what may be built there. A `DirectoryTarget` (a
local directory, or one every machine of the build mounts at the same path), which the shard
jobs write into; or a `StoreTarget` (an object store prefix), assembled in a local staging
directory and published from it by its `Publisher`, the manifest last. `build()` chooses one
(`choose_target`) at its top."""

from .choose import choose_target
from .directory import DirectoryTarget
from .out_dir import OutState, check_out_dir, start_build_dir
from .store import StoreTarget
from .store_prefix import StorePrefix
from .target import Publisher, Target
from .upload import StagedUpload

__all__ = [
    "DirectoryTarget",
    "OutState",
    "Publisher",
    "StagedUpload",
    "StorePrefix",
    "StoreTarget",
    "Target",
    "check_out_dir",
    "choose_target",
    "start_build_dir",
]
