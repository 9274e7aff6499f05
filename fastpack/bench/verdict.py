"""Which loader to use and what limits it, from the measurements alone: first the loader (the
fastest, the simpler one when two are within `PREFER_MARGIN`), then the one bottleneck that the
numbers point at, checked in this order:

1. trainer: with a training step, the trainer waits at most `TRAINER_WAIT_OK` of the time;
2. network: streaming from a URL runs below `NETWORK_BOUND` of the local copy (without one, of
   the decode ceiling, or of what the step takes when that is less);
3. decode: with no step, the chosen loader reaches `DECODE_BOUND` of the decode ceiling; with a
   step (whose images/s the loader's are then capped at), the step takes at least
   `DECODE_BOUND` of what decoding alone gives;
4. loader: anything else (reading shards, batching, handing batches to the trainer).

The thresholds and the advice are `loader.stats()`'s too (`fastpack.reader.stats.verdict`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from fastpack.reader.stats.verdict import (
    DECODE_BOUND,
    FETCH_HINT,
    TRAINER_WAIT_OK,
    decode_hint,
    step_bound,
)

from .options import LOADERS
from .results import LoaderResult

NETWORK_BOUND = 0.8
PREFER_MARGIN = 1.05  # a loader later in LOADERS must be this much faster to be chosen
SHORT_EPOCH = 50  # batches per epoch below which each epoch's restart weighs on the numbers
NOISY = 0.25  # passes this far apart ((fastest - slowest) / median): the machine is busy
LOADER_HINT = (
    "(reading shards, batching, handing batches over); check the disk (io='pread' on network "
    "file systems) and try larger batches"
)
Bottleneck = Literal["trainer", "network", "decode", "loader"]


@dataclass(frozen=True, kw_only=True)
class Verdict:
    use: str | None  # the loader to use; None when none was measured
    bottleneck: Bottleneck | None
    lines: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class Setting:
    """What the measurements were taken with."""

    ceiling: float  # images/s of the decode ceiling
    step_ms: float
    remote: bool  # the streaming loader read from a URL (the others, a local copy)
    workers: int
    cpus: int
    batch_size: int
    batches_per_epoch: int
    ceiling_spread: float = 0.0  # (fastest - slowest) / median of the ceiling's passes

    @property
    def demand(self) -> float | None:
        """Images/s the training step takes when it never waits (None: no step)."""
        return self.batch_size * 1000 / self.step_ms if self.step_ms > 0 else None


def decide(results: Sequence[LoaderResult], setting: Setting) -> Verdict:
    measured = {r.name: r for r in results if r.timing is not None}
    if not measured:
        reasons = "; ".join(f"{r.name}: {r.skipped}" for r in results)
        return Verdict(use=None, bottleneck=None, lines=(f"no loader was measured ({reasons})",))
    best = _choose(measured)
    kind, why = _bottleneck(best, measured, setting)
    lines = [_choice(best, measured, setting), why]
    spreads = [setting.ceiling_spread, *(r.timing.spread for r in measured.values() if r.timing)]
    if max(spreads) > NOISY:
        lines.append(
            f"passes differ by up to {max(spreads):.0%}: something else is using this machine, "
            "so these numbers are rough (more --passes or --seconds steady them)"
        )
    if setting.batches_per_epoch < SHORT_EPOCH:
        lines.append(
            f"an epoch is only {setting.batches_per_epoch} batches: the loaders refill their "
            "prefetch at each epoch's start, which weighs more here than on a larger dataset"
        )
    if setting.step_ms == 0:
        lines.append(
            "with --step-ms 0 the loop only loads, so it always waits: give your training "
            "step's time to see how much of it training would wait"
        )
    return Verdict(use=best.name, bottleneck=kind, lines=tuple(lines))


def _rate(result: LoaderResult) -> float:
    rate = result.images_per_second
    return 0.0 if rate is None else rate


def _choose(measured: dict[str, LoaderResult]) -> LoaderResult:
    """The fastest loader; an earlier one in LOADERS (simpler) unless a later one beats it by
    `PREFER_MARGIN`."""
    ordered = [measured[name] for name in LOADERS if name in measured]
    best = ordered[0]
    for result in ordered[1:]:
        if _rate(result) > PREFER_MARGIN * _rate(best):
            best = result
    return best


def _choice(best: LoaderResult, measured: dict[str, LoaderResult], setting: Setting) -> str:
    others = [r for name, r in measured.items() if name != best.name]
    versus = ", ".join(f"{_ratio(_rate(best), _rate(r))} {r.name}" for r in others)
    where = " over the local copy" if setting.remote and best.name != "streaming" else ""
    share = _share(_rate(best), setting.ceiling)
    return (
        f"use {best.name}{where}: {versus or 'the only loader measured'}; "
        f"at {share:.0%} of the decode ceiling"
    )


def _share(rate: float, reference: float) -> float:
    return rate / reference if reference > 0 else float("inf")


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.1f}x" if b > 0 else "inf x"


def _bottleneck(
    best: LoaderResult, measured: dict[str, LoaderResult], setting: Setting
) -> tuple[Bottleneck, str]:
    wait = best.wait_share or 0.0
    if setting.step_ms > 0 and wait <= TRAINER_WAIT_OK:
        return "trainer", step_bound(wait)
    waits = f"the trainer waits {wait:.0%} of the time; " if setting.step_ms > 0 else ""
    network = _network(measured, setting)
    if network is not None:
        return "network", waits + network
    demand, ceiling = setting.demand, setting.ceiling
    if demand is None:
        share = _share(_rate(best), ceiling)
        if share >= DECODE_BOUND:
            return "decode", f"decoding is the bottleneck: {_decode_hint(setting)}"
        return "loader", (
            f"{best.name} runs at {share:.0%} of the decode ceiling: the loader, not decoding, "
            f"is the bottleneck {LOADER_HINT}"
        )
    if demand >= DECODE_BOUND * ceiling:
        return "decode", (
            f"{waits}decoding is the bottleneck: the step takes {demand:,.0f} images/s, decoding "
            f"alone gives {ceiling:,.0f}; {_decode_hint(setting)}"
        )
    return "loader", (
        f"{waits}decoding alone gives {ceiling:,.0f} images/s for a step that takes "
        f"{demand:,.0f}: the loader is the bottleneck {LOADER_HINT}"
    )


def _decode_hint(setting: Setting) -> str:
    return decode_hint(setting.workers, setting.cpus)


def _network(measured: dict[str, LoaderResult], setting: Setting) -> str | None:
    """The network diagnosis, when streaming from a URL lags the local copy (or, without one,
    what decoding alone gives, or the step takes when that is less)."""
    stream = measured.get("streaming")
    if not setting.remote or stream is None:
        return None
    local = measured.get("map-style")
    if local is not None:
        reference, of = _rate(local), "the local copy (map-style)"
    elif setting.demand is not None and setting.demand < setting.ceiling:
        reference, of = setting.demand, "what the step takes"
    else:
        reference, of = setting.ceiling, "the decode ceiling"
    share = _share(_rate(stream), reference)
    if share >= NETWORK_BOUND:
        return None
    likely = "" if local is not None else " likely"
    return (
        f"streaming from the URL runs at {share:.0%} of {of}: the network is{likely} the "
        f"bottleneck; {FETCH_HINT}"
    )
