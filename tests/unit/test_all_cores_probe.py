"""The all-cores probe beside each multi-thread CPU result (timing/all_cores_probe.py): taken in a real
run, stored, exported, and read by `compare`, which sets a 2-thread result's shift against the host's
all-core speed at that moment: a slowdown the probe beside it shows too is no finding, one it does not
show is. Through a real SQLite store, `accelbench export` files and the CLI."""
import dataclasses
import importlib.util
import math
import random

import pytest

import accelbench
from accelbench.report.compare.machine import probe_shift
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.store.db import Store
from accelbench.timing import all_cores_probe
from compare_exports import export_run, gate, scaled_copy

SPECS = [Spec.make("matmul", b, "cpu", n=n, dtype="float32", threads=2)
         for b in ("numpy", "torch") for n in (128, 256, 512, 1024)]
PROBE_S = 0.0025


def _measurement(spec: Spec, median_s: float, seed: int) -> Measurement:
    rng = random.Random(seed)
    n = spec.param("n")
    probe = all_cores_probe.reading(2, PROBE_S * (1 + 0.005 * rng.random()), PROBE_S * (1 + 0.005 * rng.random()))
    return Measurement(spec=spec, phases_s={"compute": tuple(median_s * math.exp(0.01 * rng.gauss(0, 1))
                                                               for _ in range(40))},
                       first_call_s=median_s, work=Work(flops=2.0 * n**3, bytes_moved=12.0 * n**2),
                       check=Check(True, 1e-7, 1e-5), threads=2, telemetry={all_cores_probe.KEY: probe})


def _export(tmp_path) -> str:
    return export_run(tmp_path, "a", [_measurement(s, 1e-3 * (i + 1), seed=i) for i, s in enumerate(SPECS)])


def _variant(tmp_path, path_a: str, name: str, **scaling) -> str:
    return scaled_copy(tmp_path, path_a, name, **scaling)


def _gate(capsys, a: str, b: str) -> tuple[int, dict]:
    code, report, _ = gate(capsys, a, b)
    return code, report


def test_a_slowdown_the_probe_beside_it_shows_too_is_no_change(tmp_path, capsys):
    a = _export(tmp_path)
    code, report = _gate(capsys, a, _variant(tmp_path, a, "b", factor=1.4, probe=1.4, only=2))
    row = next(r for r in report["rows"] if r["spec"] == SPECS[2].to_dict())
    assert report["counts"]["slower"] == 0 and row["verdict"] == "inconclusive", report["summary"]
    assert code == 3  # not a pass either: a 1.4× slowdown cannot be ruled out
    assert "all-cores probe beside this spec allows: 1.40× slower in B" in row["noise"]["detail"]


def test_the_same_slowdown_the_probe_does_not_show_is_found(tmp_path, capsys):
    a = _export(tmp_path)
    code, report = _gate(capsys, a, _variant(tmp_path, a, "b", factor=1.4, probe=1.0, only=2))
    assert code == 1 and report["counts"]["slower"] == 1, report["summary"]


@pytest.mark.parametrize("factor", [2.0, 1.3])
def test_a_uniform_slowdown_with_steady_probes_fails_the_gate(tmp_path, capsys, factor):
    a = _export(tmp_path)
    code, report = _gate(capsys, a, _variant(tmp_path, a, "b", factor=factor, probe=1.0))
    assert code == 1 and report["counts"]["slower"] == len(SPECS), report["summary"]


def test_a_slower_machine_that_the_reference_and_the_probes_show_is_undecided_and_named(tmp_path, capsys):
    a = _export(tmp_path)
    code, report = _gate(capsys, a, _variant(tmp_path, a, "b", factor=2.0, probe=2.0, reference=2.0))
    assert code == 3 and report["counts"]["slower"] == 0, report["summary"]
    assert "this machine ran 2.00× slower during B" in report["summary"]
    # both widen the band: the reference's part and the probe beside the spec
    detail = report["rows"][0]["noise"]["detail"]
    assert "machine reference (compute part) allows: 2.00× slower" in detail
    assert "all-cores probe beside this spec allows: 2.00× slower" in detail


def test_a_probe_that_moved_while_its_spec_was_timed_widens_the_band_by_half_its_move():
    spec = SPECS[0]
    a = _measurement(spec, 1e-3, 1)
    moved = all_cores_probe.reading(2, PROBE_S, PROBE_S * 1.3)
    b = dataclasses.replace(a, telemetry={all_cores_probe.KEY: moved})
    shift = probe_shift(a, b)
    assert shift is not None
    assert shift.speedup == pytest.approx(a.telemetry[all_cores_probe.KEY]["before_s"] / (PROBE_S * math.sqrt(1.3)),
                                          rel=0.01)
    assert shift.tolerance_log == pytest.approx(math.log(1.3) / 2, rel=0.05)
    # another kernel, or other threads, is not compared
    other = dataclasses.replace(a, telemetry={all_cores_probe.KEY: {**moved, "threads": 4}})
    assert probe_shift(a, other) is None
    assert all_cores_probe.stored({all_cores_probe.KEY: {**moved, "kernel": "another"}}) is None
    assert all_cores_probe.stored({all_cores_probe.KEY: {**moved, "after_s": float("nan")}}) is None


def test_only_multi_thread_results_on_the_host_cpu_are_probed(monkeypatch):
    monkeypatch.setattr(all_cores_probe, "open_cores", lambda: 2)
    assert all_cores_probe.wanted(True, 2) == 2 and all_cores_probe.wanted(True, None) == 2
    assert all_cores_probe.wanted(True, 1) is None and all_cores_probe.wanted(False, None) is None
    monkeypatch.setattr(all_cores_probe, "open_cores", lambda: 1)
    assert all_cores_probe.wanted(True, None) is None


def test_a_real_run_stores_a_probe_beside_its_two_thread_result_only(tmp_path, monkeypatch):
    monkeypatch.setattr(all_cores_probe, "open_cores", lambda: 2)
    db = str(tmp_path / "r.sqlite")
    results = accelbench.run("matmul", sizes=[128], dtypes="float32", devices="cpu", backends="numpy",
                             threads=[1, 2], db=db)
    with Store(db, create=False) as store:
        stored = {m.threads: m for m in store.results(results.run_id)}
    assert set(stored) == {1, 2}
    assert all_cores_probe.KEY not in stored[1].telemetry
    probe = all_cores_probe.stored(stored[2].telemetry)
    assert probe is not None and probe.threads == 2 and 0 < probe.time_s < 1.0


@pytest.mark.skipif(importlib.util.find_spec("pyopencl") is None, reason="needs pyopencl and a PoCL")
def test_an_opencl_device_on_the_host_cpu_is_probed_and_a_single_thread_result_is_not(tmp_path, monkeypatch):
    from accelbench.devices.inventory import collect_inventory

    monkeypatch.setattr(all_cores_probe, "open_cores", lambda: 2)
    hosted = [d.id for d in collect_inventory().devices if d.on_host_cpu]
    if not hosted:
        pytest.skip("no OpenCL CPU device here")
    db = str(tmp_path / "r.sqlite")
    results = accelbench.run("reduce", sizes=[1 << 16], dtypes="float32", devices=["cpu", hosted[0]],
                             backends=["numpy", "pyopencl"], threads=[1], db=db)
    with Store(db, create=False) as store:
        stored = {m.spec.device: m for m in store.results(results.run_id)}
    assert all_cores_probe.stored(stored[hosted[0]].telemetry) is not None
    assert all_cores_probe.KEY not in stored["cpu"].telemetry
