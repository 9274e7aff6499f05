"""`run_bench`: the decode ceiling, then each loader asked for, then the verdict."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from fastpack.reader import Transform
from fastpack.reader.image.crop_decode import decoder

from .ceiling import measure_ceiling
from .loaders import Opened, dali_cpu, map_style, streaming
from .options import LOADERS, BenchOptions, available_cpus
from .payloads import read_payloads
from .report import BenchReport
from .results import LoaderResult
from .target import Target, resolve_target
from .timing import Limits, time_loader
from .verdict import Setting, decide

Log = Callable[[str], None]
NO_TORCH = "PyTorch is not installed (pip install 'fastpack[torch]')"
NO_DALI = "not installed (pip install 'fastpack[dali]')"
DALI_REMOTE = (
    "DALI reads local shards and their .idx files: copy the dataset with fetch_dataset and "
    "bench the copy"
)


def _quiet(_: str) -> None:
    pass


def run_bench(options: BenchOptions, log: Log = _quiet) -> BenchReport:
    """Measure what `options` asks for; `log` receives a line as each measurement starts."""
    target = resolve_target(options.path, options.storage_options)
    transform = options.make_transform()
    limits = Limits(
        seconds=options.seconds,
        batches=options.batches,
        passes=options.passes,
        step_ms=options.step_ms,
        warmup=max(1, options.workers),
    )
    processes = max(1, options.workers)
    log(f"decode ceiling: {processes} decoding processes, no loader")
    payloads = read_payloads(target, options.storage_options)
    ceiling = measure_ceiling(
        payloads,
        transform,
        processes=processes,
        limits=limits,
        batch_size=options.batch_size,
        where=target.path,
    )
    torch = _import("torch")  # here: a trainer's first batch does not wait for the import
    results = []
    for name in (n for n in LOADERS if n in options.loaders):
        if not torch:
            results.append(LoaderResult(name=name, skipped=NO_TORCH))
            continue
        log(f"{name}: {options.passes} passes after a warm-up")
        results.append(_measure(name, target, transform, options, limits))
    setting = Setting(
        ceiling=ceiling.images_per_second,
        step_ms=options.step_ms,
        remote=target.remote,
        workers=options.workers,
        cpus=available_cpus(),
        batch_size=options.batch_size,
        ceiling_spread=ceiling.spread,
        batches_per_epoch=-(-target.manifest.num_samples // options.batch_size),
    )
    return BenchReport(
        options=options,
        samples=target.manifest.num_samples,
        shards=len(target.manifest.shards),
        ceiling=ceiling,
        results=tuple(results),
        verdict=decide(results, setting),
        decoder=str(decoder()),
    )


def _measure(
    name: str, target: Target, transform: Transform, options: BenchOptions, limits: Limits
) -> LoaderResult:
    opener, skipped = _opener(name, target, transform, options)
    if opener is None:
        return LoaderResult(name=name, skipped=skipped)
    notes: list[str] = []

    def open_loader() -> Opened:
        opened = opener()
        if opened.note:
            notes.append(opened.note)
        return opened

    try:
        timing = time_loader(open_loader, limits, f"{target.path}: {name}")
    except Exception as e:  # one loader's failure is its row; the others still run
        return LoaderResult(name=name, skipped=f"failed: {type(e).__name__}: {e}")
    if target.remote and name == "streaming":
        notes.insert(0, "from the URL into a new cache")
        if timing.images > target.manifest.num_samples:
            notes.append("read past one epoch: later epochs came from that cache")
    elif target.remote:
        notes.insert(0, f"over the local copy {target.local}")
    return LoaderResult(name=name, timing=timing, note="; ".join(notes) or None)


def _opener(
    name: str, target: Target, transform: Transform, options: BenchOptions
) -> tuple[Callable[[], Opened] | None, str | None]:
    """How to open loader `name`, or why it cannot run here."""
    if name == "streaming":
        return lambda: streaming(target.path, transform, options, target.remote), None
    if name == "dali-cpu":
        if not _import("nvidia.dali"):
            return None, NO_DALI
        if target.remote:
            return None, DALI_REMOTE
    local = target.local
    if local is None:
        return None, target.no_local
    make = map_style if name == "map-style" else dali_cpu
    return lambda: make(local, transform, options), None


def _import(module: str) -> bool:
    """Whether `module` imports (then it is imported)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True
