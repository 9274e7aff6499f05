"""`fastpack bench`: what each way of reading a dataset gives on this machine, with the user's
workers and transform, against the decode ceiling (JPEG decode + transform, no loader), and which
to use and why."""

from .ceiling import Ceiling, measure_ceiling
from .options import LOADERS, TRANSFORMS, BenchOptions, default_workers
from .report import BenchReport
from .results import LoaderResult
from .run import run_bench
from .timing import Limits, Timing, time_loader
from .verdict import Setting, Verdict, decide

__all__ = [
    "LOADERS",
    "TRANSFORMS",
    "BenchOptions",
    "BenchReport",
    "Ceiling",
    "Limits",
    "LoaderResult",
    "Setting",
    "Timing",
    "Verdict",
    "decide",
    "default_workers",
    "measure_ceiling",
    "run_bench",
    "time_loader",
]
