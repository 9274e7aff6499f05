"""The template datasets, and one seeded campaign over every target that the tests share."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .campaign import CampaignResult, run_campaign
from .datasets import build_templates
from .harness import memory_budget_kib
from .plan import TIMEOUT, plan, settings
from .targets import TARGETS, available


@pytest.fixture(scope="session")
def fuzz_templates(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return build_templates(tmp_path_factory.mktemp("fuzz-templates"))


def runnable_targets() -> list[str]:
    """The fuzz targets, less those whose C extension is not built here (where CI requires
    the extensions, FASTPACK_REQUIRE_WINDOW_DECODER=1, none is left out)."""
    names = [t for t in TARGETS if not t.startswith("selftest_")]
    if os.environ.get("FASTPACK_REQUIRE_WINDOW_DECODER") == "1":
        return names
    return [t for t in names if available(t)]


@pytest.fixture(scope="session")
def fuzz_campaign(
    fuzz_templates: dict[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> CampaignResult:
    cases, workers, seed = settings()
    result = run_campaign(
        plan(cases, runnable_targets()),
        seed=seed,
        workers=workers,
        workdir=tmp_path_factory.mktemp("fuzz-work"),
        templates=fuzz_templates,
        budget_kib=memory_budget_kib(),
        timeout=TIMEOUT,
    )
    print(f"\nfuzz: {cases} cases, seed {seed}, {workers} workers, {result.wall_seconds:.1f} s")
    print(result.summary())
    return result
