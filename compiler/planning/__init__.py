"""Planning: the source scanned once into an on-disk plan (flat numpy files, memory-mapped by the
shard jobs), optionally shuffled, cut into shards of equal sample counts."""

from .make_plan import make_plan
from .plan_base import PlanBase, extend_classes, without_dictionaries
from .plan_slice import PlanRows, PlanSlice, slice_shard
from .plan_store import Plan, PlanMeta, read_meta

__all__ = [
    "Plan",
    "PlanBase",
    "PlanMeta",
    "PlanRows",
    "PlanSlice",
    "extend_classes",
    "make_plan",
    "read_meta",
    "slice_shard",
    "without_dictionaries",
]
