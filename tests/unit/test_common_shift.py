"""The specs' common shift as a finding (report/compare/common_shift.py): every spec slower together by
a factor no one spec's band can show is the code's, unless the machine reference moved as much; an A/A
pair with the same scatter is not. Through a real SQLite store, `accelbench export` files and the CLI."""
import dataclasses
import math
import random

import pytest

from accelbench.report.compare.common_shift import MIN_SPECS, common_shift
from accelbench.report.compare.machine import MachineShift, PartShift
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.timing import all_cores_probe
from compare_exports import export_run, gate, scaled_copy

SPECS = [Spec.make("matmul", "numpy", "cpu", n=n, dtype=d, threads=1) for n in range(64, 64 + 10 * 32, 32)
         for d in ("float32", "float64")]


def _measurement(spec: Spec, median_s: float, rng: random.Random) -> Measurement:
    n = spec.param("n")
    return Measurement(spec=spec, phases_s={"compute": tuple(median_s * math.exp(0.01 * rng.gauss(0, 1))
                                                               for _ in range(40))},
                       first_call_s=median_s, work=Work(flops=2.0 * n**3, bytes_moved=12.0 * n**2),
                       check=Check(True, 1e-7, 1e-5))


def _export(tmp_path, name: str, factor: float, scatter: float, seed: int, reference: float = 1.0) -> str:
    """One run: spec i takes 1 ms × (i + 1) × factor × a per-spec scatter (log-normal, `scatter`)."""
    rng = random.Random(seed)
    return export_run(tmp_path, name, [_measurement(s, 1e-3 * (i + 1) * factor * math.exp(scatter * rng.gauss(0, 1)), rng)
                                       for i, s in enumerate(SPECS)], reference=reference)


def _gate(capsys, a: str, b: str) -> tuple[int, dict]:
    code, report, _ = gate(capsys, a, b)
    return code, report


def test_every_spec_slower_together_fails_the_gate_though_no_spec_alone_clears_its_band(tmp_path, capsys):
    a = _export(tmp_path, "a", 1.0, 0.12, seed=1)
    code, report = _gate(capsys, a, _export(tmp_path, "b", 1.3, 0.12, seed=2))
    assert report["counts"]["slower"] == 0  # each spec's own scatter (±12%) gives it a wide band
    assert code == 1 and report["fail_if_slower"]["common_shift_failed"], report["summary"]
    assert report["code_shift"]["codes"] and report["code_shift"]["ratio"] == pytest.approx(1 / 1.3, rel=0.12)
    assert "the specs together: 1." in report["fail_if_slower"]["text"] and "the code's" in report["summary"]
    assert "no change beyond run-to-run noise" not in report["summary"]


def test_the_same_scatter_without_a_slowdown_is_no_finding(tmp_path, capsys):
    a = _export(tmp_path, "a", 1.0, 0.12, seed=1)
    code, report = _gate(capsys, a, _export(tmp_path, "b", 1.0, 0.12, seed=2))
    assert code == 3 and not report["code_shift"]["codes"], report["summary"]
    assert "within the ±" in report["code_shift"]["text"]


def test_a_slowdown_the_machine_reference_shows_too_is_not_the_codes(tmp_path, capsys):
    a = _export(tmp_path, "a", 1.0, 0.12, seed=1)
    code, report = _gate(capsys, a, _export(tmp_path, "b", 1.3, 0.12, seed=2, reference=1.3))
    assert code == 3 and not report["code_shift"]["codes"], report["summary"]
    assert report["machine_reference"]["text"] == "1.30× slower" and "the machine reference allows" in report["summary"]


def _machine(shift: float, tolerance: float = math.log1p(0.03)) -> MachineShift:
    part = PartShift(shift, tolerance, 0.01, 0.01)
    return MachineShift(part, part, part, (3, 3))


def test_the_finding_needs_a_reference_and_enough_specs():
    slower = [1 / 1.3] * 20
    assert common_shift(slower, None) is None
    assert common_shift(slower[:MIN_SPECS - 1], _machine(1.0)) is None
    found = common_shift(slower[:MIN_SPECS], _machine(1.0))
    assert found is not None and found.codes and found.slower_beyond(0.1) and not found.slower_beyond(0.35)


def test_its_two_error_rates_on_synthetic_pairs():
    """A/A pairs of 20 specs each scattering ±10% (log-normal) between runs: the finding is made in at
    most 1% of 2,000; a uniform 1.3× slowdown with the same scatter is found in at least 99%."""
    rng = random.Random(20261205)

    def found(factor: float) -> bool:
        ratios = [math.exp(0.1 * rng.gauss(0, 1)) / factor for _ in range(20)]
        shift = common_shift(ratios, _machine(math.exp(0.01 * rng.gauss(0, 1))))
        return shift is not None and shift.codes

    false_changes = sum(found(1.0) for _ in range(2000)) / 2000
    detected = sum(found(1.3) for _ in range(2000)) / 2000
    assert false_changes <= 0.01 and detected >= 0.99, (false_changes, detected)


# -- the multi-thread specs' own shift ---------------------------------------------------------------

PROBE_S = 0.01


def _mixed_export(tmp_path, name: str, seed: int) -> str:
    """Sixteen one-thread specs and sixteen two-thread ones, each two-thread result with its all-cores
    probe; every spec scattering ±12% between runs, so no one spec's band shows a 1.3× change."""
    rng = random.Random(seed)
    found = []
    for i, n in enumerate(range(64, 64 + 16 * 32, 32)):
        for threads in (1, 2):
            spec = Spec.make("matmul", "numpy", "cpu", n=n, dtype="float32", threads=threads)
            m = _measurement(spec, 1e-3 * (i + 1) / threads * math.exp(0.12 * rng.gauss(0, 1)), rng)
            if threads == 2:
                probe = all_cores_probe.reading(2, PROBE_S * (1 + 0.01 * rng.random()), PROBE_S * (1 + 0.01 * rng.random()))
                m = dataclasses.replace(m, threads=2, telemetry={all_cores_probe.KEY: probe})
            found.append(m)
    return export_run(tmp_path, name, found)


def _two_threads(result: dict) -> bool:
    return result["spec"]["params"].get("threads") == 2


def test_only_the_multi_thread_specs_slower_together_fails_the_gate(tmp_path, capsys):
    """A change that slows the work spread over the cores alone (half the specs): the median of all the
    specs moves half as much, the multi-thread specs' own median shows it."""
    a = _mixed_export(tmp_path, "a", seed=1)
    b = scaled_copy(tmp_path, _mixed_export(tmp_path, "b0", seed=2), "b", factor=1.3, pick=_two_threads)
    code, report = _gate(capsys, a, b)
    assert report["counts"]["slower"] == 0, report["summary"]
    assert code == 1 and report["fail_if_slower"]["common_shift_failed"], report["summary"]
    assert report["code_shift"]["scope"] == "the multi-thread specs together"
    assert report["code_shift"]["ratio"] == pytest.approx(1 / 1.3, rel=0.12)


def test_an_all_core_phase_the_probes_saw_is_not_the_codes(tmp_path, capsys):
    """The same slowdown with the probes beside those specs 1.3× slower too: the host's all-core phase."""
    a = _mixed_export(tmp_path, "a", seed=1)
    b = scaled_copy(tmp_path, _mixed_export(tmp_path, "b0", seed=2), "b", factor=1.3, probe=1.3, pick=_two_threads)
    code, report = _gate(capsys, a, b)
    assert code == 3 and not report["fail_if_slower"]["common_shift_failed"], report["summary"]


def test_probes_that_ran_faster_do_not_excuse_slower_specs(tmp_path, capsys):
    """A machine whose all-core work ran faster during B cannot explain code that ran slower there."""
    a = _mixed_export(tmp_path, "a", seed=1)
    b = scaled_copy(tmp_path, _mixed_export(tmp_path, "b0", seed=2), "b", factor=1.3, probe=1 / 1.3, pick=_two_threads)
    code, report = _gate(capsys, a, b)
    assert code == 1 and report["code_shift"]["scope"] == "the multi-thread specs together", report["summary"]
