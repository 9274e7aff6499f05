"""Every fuzz case ends as pixels (or a parsed file, an accepted state) or a named error: no
signal, no hang, no traceback, no peak memory over the budget, and no wrong answer (a window
decode that differs from the whole decode, a lossy baseline transcode, an error that does not
name the sample, file or field, a state a schema check must refuse).

The cases are seeded (tests/fuzz/plan.py: `FASTPACK_FUZZ_CASES`, `FASTPACK_FUZZ_SEED`); a
failure's message gives the command that reproduces it.
"""

from __future__ import annotations

import pytest

from .campaign import CampaignResult
from .conftest import runnable_targets
from .targets import TARGETS

_SHOWN = 12  # failure groups in a message

TARGET_NAMES = [t for t in TARGETS if not t.startswith("selftest_")]


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_no_case_fails(target: str, fuzz_campaign: CampaignResult) -> None:
    if target not in runnable_targets():
        pytest.skip(f"{target}: its C extension is not built here")
    tally = fuzz_campaign.tallies[target]
    assert tally.cases > 0
    groups = [(key, group) for key, group in fuzz_campaign.signatures().items() if key[0] == target]
    lines = [
        f"{kind} x{len(group)}: {group[0].detail[:400]}\n    case {group[0].description[:400]}"
        f"\n    reproduce: {group[0].reproduce(fuzz_campaign.seed)}"
        for (_, kind, _), group in groups[:_SHOWN]
    ]
    failed = sum(len(group) for _, group in groups)
    assert not failed, f"{target}: {failed} of {tally.cases} cases failed:\n" + "\n".join(lines)


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_cases_reach_both_outcomes(target: str, fuzz_campaign: CampaignResult) -> None:
    """The mutations are neither all fatal nor all harmless: each target both reads some cases
    and refuses others (else the oracle above would check little)."""
    if target not in runnable_targets():
        pytest.skip(f"{target}: its C extension is not built here")
    tally = fuzz_campaign.tallies[target]
    least = max(1, 0.02 * tally.cases)
    assert tally.kinds["ok"] >= least, tally.kinds
    assert tally.kinds["refused"] >= least, tally.kinds
