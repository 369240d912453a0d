"""No substring of a warning decides anything (issue 29): every warning and verdict reason is a
`Caveat` with a kind, and verdicts, advice and the answer read the kind. Reworded at the source,
every text changes and every decision stays."""
from __future__ import annotations

import dataclasses
import functools
import random

import pytest
from fakes import FakeBackend, FakeClock
from synthetic_runs import DEVICES

from accelbench import verdict
from accelbench.report.advice import findings
from accelbench.report.analysis import analyse
from accelbench.report.headline import caveat_lines
from accelbench.results import Measurement, Spec
from accelbench.runner import audit, block_audit, execute
from accelbench.runner.execute import TrustContext, measure_item
from accelbench.runner.plan import PlanItem
from accelbench.store.db import Store
from accelbench.timing import sync_probe
from accelbench.workloads import rotation
from accelbench.timing.contention import Interference
from accelbench.verdict import Caveat, caveats_from_json, caveats_to_json, kind_of
from accelbench.timing.rigor import RIGORS

MARK = "\u27f2"  # a reworded text starts with it: reworded once, never twice


def _reword(monkeypatch) -> None:
    """Every caveat made from now on reads backwards (a test of words: "target" becomes "tegrat")."""
    made = Caveat.__new__

    def reworded(cls, text, kind="", figures=None):
        plain = str(text)
        return made(cls, plain if plain.startswith(MARK) else MARK + plain[::-1], kind or kind_of(text),
                    figures if figures is not None else getattr(text, "figures", None))

    monkeypatch.setattr(Caveat, "__new__", staticmethod(reworded))


class _Busy:
    """contention.watch, always seeing another process on both cores (a disturbed window)."""

    result = Interference(1.0, 2, 0.96, 0.0, 0.0, 0.3)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def _measured(monkeypatch, *, drifting: bool) -> Measurement:
    """A deterministic measurement: virtual time, seeded jitter, a busy machine; drifting or not."""
    monkeypatch.setattr(execute.contention, "watch", lambda *a, **k: _Busy())
    monkeypatch.setattr(execute.quiesce, "settle", lambda *a, **k: None)
    # the sync proof draws its order from the system's entropy and reads this process's real CPU time:
    # on a loaded machine it once said "not proven" in one of the two measurements. Seeded, and no CPU clock.
    monkeypatch.setattr(audit, "_PRIVATE", random.Random(5))
    monkeypatch.setattr(block_audit, "private_draw", lambda: random.Random(5))  # the timed blocks' lengths
    monkeypatch.setattr(rotation, "_PRIVATE", random.Random(6))  # the values changed, the elements judged
    monkeypatch.setattr(audit, "prove", functools.partial(sync_probe.prove, cpu_clock=None))
    clock = FakeClock(jitter=0.3, seed=7)
    cost = (lambda i: 1e-3 * (1 + i / 300)) if drifting else 1e-3
    backend = FakeBackend(clock, kernel_s=cost, device="cpu", transfer_s_per_byte=1e-9)
    spec = Spec.make("stream", backend.name, "cpu", kernel="triad", n=4096, dtype="float64")
    return measure_item(PlanItem(spec, None), backend, RIGORS["quick"], seed=3, clock=clock,
                        trust=TrustContext(devices=dict(DEVICES), probe_sync=False))


def _by_kind(value):
    """Figures with every caveat in them replaced by its kind (its words are allowed to differ)."""
    if isinstance(value, Caveat):
        return value.kind
    if isinstance(value, dict):
        return {k: _by_kind(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_by_kind(v) for v in value]
    return value


def _decisions(m: Measurement) -> dict:
    rows = analyse([m], DEVICES)
    advice = [(f.kind, f.severity, _by_kind(f.numbers)) for f in findings(rows, DEVICES, {}, rigor="quick")]
    return {"verdict": m.verdict, "reason_kinds": [kind_of(r) for r in m.verdict_reasons],
            "warning_kinds": [kind_of(w) for w in m.warnings], "advice": advice,
            "answer": caveat_lines(rows), "disturbed": execute._disturbed(m),
            "phases": [f.status for f in execute.phase_findings(m)]}


@pytest.mark.parametrize("drifting", [False, True])
def test_reworded_warnings_give_the_same_verdicts_advice_and_answer(monkeypatch, drifting):
    original = _measured(monkeypatch, drifting=drifting)
    _reword(monkeypatch)
    reworded = _measured(monkeypatch, drifting=drifting)
    texts = [str(c) for c in (*reworded.warnings, *reworded.verdict_reasons)]
    assert texts and all(t.startswith(MARK) for t in texts), texts  # every text came from a producer, reworded
    assert [str(c) for c in original.warnings] != [str(c) for c in reworded.warnings]
    assert original.verdict != "valid"  # the busy machine made it noisy: there is something to decide
    assert _decisions(original) == _decisions(reworded)


def test_every_warning_and_reason_of_a_run_has_a_kind(monkeypatch):
    m = _measured(monkeypatch, drifting=True)
    caveats = (*m.warnings, *m.verdict_reasons)
    assert caveats and all(kind_of(c) for c in caveats), [c for c in caveats if not kind_of(c)]
    # the drift shows, in the kept timing or in the note of the first attempt (the runner measures twice)
    seen = {kind_of(w) for w in m.warnings} | {k for w in m.warnings for k in w.figures.get("first_kinds", ())}
    assert verdict.DRIFT in seen
    assert verdict.OTHER_PROCESSES in {kind_of(r) for r in m.verdict_reasons}


def test_kinds_survive_the_database_and_an_export(monkeypatch, tmp_path):
    m = _measured(monkeypatch, drifting=True)
    with Store(tmp_path / "r.sqlite") as store:
        run_id = store.start_run({}, {})
        store.add_result(run_id, m)
        (back,) = store.results(run_id)
    again = Measurement.from_dict(m.to_dict())
    for copy in (back, again):
        assert [(str(c), kind_of(c)) for c in copy.warnings] == [(str(c), kind_of(c)) for c in m.warnings]
        assert [kind_of(c) for c in copy.verdict_reasons] == [kind_of(c) for c in m.verdict_reasons]


def test_results_stored_before_kinds_read_back_with_the_harness_kinds_they_had():
    old = ["unstable: IQR is 40% of median", "drift: the last third of the samples is 9% slower than the first",
           "to_device: unstable: IQR is 12% of median", "a plugin's own words"]
    kinds = [kind_of(c) for c in caveats_from_json(old)]
    assert kinds == [verdict.UNSTABLE, verdict.DRIFT, "", ""]
    assert caveats_to_json(["plain"]) == ["plain"]
    stored = caveats_to_json([Caveat("x", verdict.TARGET, {"rel_ci_halfwidth": 0.07})])
    assert stored == [{"text": "x", "kind": "target", "figures": {"rel_ci_halfwidth": 0.07}}]
    assert kind_of(caveats_from_json(stored)[0]) == verdict.TARGET


def test_a_plain_text_that_reads_like_a_harness_warning_decides_nothing():
    """A third party's words mentioning a target, drift or instability do not make a result noisy."""
    assert not execute._disturbs("the target of this plugin: drift-free, unstable: never")
    assert execute._disturbs(Caveat("words of any kind", verdict.DRIFT))
    m = dataclasses.replace(_plain_measurement(), warnings=("unstable: IQR is 60% of median",))
    assert not execute._disturbed(m)


def _plain_measurement() -> Measurement:
    from accelbench.results import Check, Work

    return Measurement(Spec.make("stream", "numpy", "cpu", n=10), {"compute": (1e-3,) * 6}, 0.0, Work(0, 1),
                       Check(True, 0.0, 1e-10))
