"""The harness sees what it exists to see: a child killed by a signal, a hang, memory over the
budget, an exception that is not a named error, and an answer that is; and it goes on with a new
child after each death."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .harness import Worker


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Worker]:
    """One worker for the module: each test leaves it able to run the next."""
    made = Worker(tmp_path_factory.mktemp("harness"), {}, budget_kib=200 << 10, timeout=3.0)
    yield made
    made.close()


def test_a_signal_is_a_failure_and_the_next_case_gets_a_new_child(worker: Worker) -> None:
    assert worker.run("selftest_sleep", {"seconds": 0}).kind == "ok"
    starts = worker.starts
    outcome = worker.run("selftest_abort", {})
    assert (outcome.kind, outcome.failed) == ("signal", True)
    assert "SIGABRT" in outcome.detail
    assert "Fatal Python error: Aborted" in outcome.detail
    assert "in _abort" in outcome.detail  # the child's stack, from faulthandler
    after = worker.run("selftest_sleep", {"seconds": 0})
    assert (after.kind, worker.starts) == ("ok", starts + 1)


def test_a_case_past_the_timeout_is_a_hang(worker: Worker) -> None:
    outcome = worker.run("selftest_sleep", {"seconds": 60})
    assert outcome.kind == "hang"
    assert worker.process is None  # killed
    assert worker.run("selftest_sleep", {"seconds": 0}).kind == "ok"


def test_peak_memory_is_measured_per_case(worker: Worker) -> None:
    small = worker.run("selftest_allocate", {"bytes": 100 << 20})
    assert small.kind == "ok"
    assert 95 << 10 <= small.peak_kib <= 140 << 10
    again = worker.run("selftest_allocate", {"bytes": 1 << 20})  # the peak was reset
    assert again.peak_kib < 20 << 10


def test_memory_over_the_budget_is_a_failure(worker: Worker) -> None:
    over = worker.run("selftest_allocate", {"bytes": 300 << 20})
    assert over.kind == "memory"
    assert "budget" in over.detail
    # far over: the address-space limit makes the allocation fail before the machine suffers
    refused = worker.run("selftest_allocate", {"bytes": 8 << 30})
    assert refused.kind == "memory"
    assert "MemoryError" in refused.detail


def test_an_exception_other_than_the_named_errors_is_a_traceback(worker: Worker) -> None:
    outcome = worker.run("selftest_raise", {"error": "KeyError", "text": "x"})
    assert outcome.kind == "traceback"
    assert outcome.detail.startswith("KeyError: 'x' at ")
    assert " at tests.fuzz.targets:" in outcome.detail  # where it was raised
    named = worker.run("selftest_raise", {"error": "ValueError", "text": "bad bytes"})
    assert (named.kind, named.detail, named.failed) == ("refused", "ValueError: bad bytes", False)
