"""A compute timing the harness calls disturbed is taken once more (runner/execute.py): a passing
transient on a quiet machine does not make the result noisy, a lasting one still does, and the
result says it was measured twice and why."""
from __future__ import annotations

import dataclasses

from fakes import FakeBackend, FakeClock

from accelbench.results import Spec
from accelbench.runner import execute
from accelbench.runner.execute import TrustContext, measure_item
from accelbench.runner.plan import PlanItem
from accelbench.timing.contention import Interference
from accelbench.timing.rigor import RIGORS
from accelbench.verdict import DRIFT, NOISY, REMEASURED, VALID, Caveat, kind_of


class _Watch:
    """contention.watch seeing a fixed window: another process on both cores, or nothing else."""

    def __init__(self, busy: bool) -> None:
        self.result = Interference(1.0, 2, 0.96, 0.0, 0.0, 0.3) if busy else Interference(1.0, 2, 0.0, 2.0, 0.0, 0.0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def _measured(monkeypatch, disturbed_attempts: int, first_wall_s: float | None = None, busy: bool = False,
              rigor: str = "standard"):
    """A stream result whose first `disturbed_attempts` compute timings carry a drift warning."""
    monkeypatch.setattr(execute.quiesce, "settle", lambda *a, **k: None)
    monkeypatch.setattr(execute.contention, "watch", lambda *a, **k: _Watch(busy))
    real, attempts = execute.measure, []

    def measure(call, synchronize, **kwargs):
        timing = real(call, synchronize, **kwargs)
        if kwargs.get("state") is not execute.cpu_state:
            return timing  # another phase than compute
        attempts.append(timing)
        if len(attempts) <= disturbed_attempts:
            drift = Caveat("drift: the last third of the samples is 9% slower than the first", DRIFT)
            timing = dataclasses.replace(timing, warnings=(*timing.warnings, drift))
        if len(attempts) == 1 and first_wall_s is not None:
            timing = dataclasses.replace(timing, total_wall_s=first_wall_s)
        return timing

    monkeypatch.setattr(execute, "measure", measure)
    clock = FakeClock(jitter=0.01, seed=7)
    backend = FakeBackend(clock, kernel_s=1e-3, device="cpu", transfer_s_per_byte=1e-9)
    spec = Spec.make("stream", backend.name, "cpu", kernel="triad", n=4096, dtype="float64")
    m = measure_item(PlanItem(spec, None), backend, RIGORS[rigor], seed=3, clock=clock,
                     trust=TrustContext(probe_sync=False))
    return m, len(attempts)


def test_a_transient_disturbance_is_measured_again_and_the_second_attempt_counts(monkeypatch):
    m, attempts = _measured(monkeypatch, disturbed_attempts=1)
    assert attempts == 2
    assert m.verdict == VALID, m.verdict_reasons
    notes = [w for w in m.warnings if kind_of(w) == REMEASURED]
    assert len(notes) == 1 and "drift" in notes[0].figures["first_kinds"]
    assert not any(kind_of(w) == DRIFT for w in m.warnings)  # the dropped attempt's warning is not the result's


def test_a_lasting_disturbance_shows_in_the_second_attempt_too(monkeypatch):
    m, attempts = _measured(monkeypatch, disturbed_attempts=2)
    assert attempts == 2  # once more, not until it passes
    assert m.verdict == NOISY
    assert any(kind_of(w) == DRIFT for w in m.warnings) and any(kind_of(w) == REMEASURED for w in m.warnings)


def test_an_undisturbed_timing_is_taken_once(monkeypatch):
    m, attempts = _measured(monkeypatch, disturbed_attempts=0)
    assert attempts == 1 and m.verdict == VALID
    assert not any(kind_of(w) == REMEASURED for w in m.warnings)


def test_a_quick_answer_takes_its_one_attempt(monkeypatch):
    """At quick rigor a disturbed timing stays as it was (noisy), not taken again: a quick answer
    spends its minute on the work, not on second attempts."""
    m, attempts = _measured(monkeypatch, disturbed_attempts=1, rigor="quick")
    assert attempts == 1 and m.verdict == NOISY


def test_a_long_disturbed_timing_is_not_taken_again(monkeypatch):
    budget_s = RIGORS["standard"].budget_s
    m, attempts = _measured(monkeypatch, disturbed_attempts=1,
                            first_wall_s=(execute.RETRY_MAX_BUDGETS + 1) * budget_s)
    assert attempts == 1 and m.verdict == NOISY


def test_a_disturbance_with_a_load_in_view_is_not_taken_again_and_names_the_load(monkeypatch):
    m, attempts = _measured(monkeypatch, disturbed_attempts=1, busy=True)
    assert attempts == 1 and m.verdict == NOISY
    assert any("other processes" in r for r in m.verdict_reasons)
