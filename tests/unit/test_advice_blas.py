"""Why a CPU framework's matmul trails another's (report/advice_blas.py): said only where the run's own
records name the cause and its measurements decided the gap."""
from __future__ import annotations

import dataclasses

import pytest
from synthetic_runs import CPU, measurement

from accelbench.report.advice import findings
from accelbench.report.analysis import analyse

AVX512 = ["AVX2", "FMA", "AVX-512F", "AVX-512BW"]
HASWELL = {"environment": {"OPENBLAS_CORETYPE": "Haswell"}}
MKL = {"software": {"torch": "2.13.0+cpu", "torch_blas": "mkl"}}


def _cpu(vendor: str, features: list[str]):
    return {"cpu": dataclasses.replace(CPU, vendor=vendor, properties={**CPU.properties, "features": features})}


def _blas(numpy_s: float, torch_s: float, devices: dict, machine: dict) -> list:
    """matmul float32 n=1000 on 2 threads: jax at 5 ms, numpy and torch at the times given."""
    ms = [measurement("matmul", backend, "cpu", compute_s=seconds, threads=2, n=1000, dtype="float32")
          for backend, seconds in (("jax", 0.005), ("numpy", numpy_s), ("torch", torch_s))]
    return [f for f in findings(analyse(ms, devices), devices, machine) if f.kind == "blas_kernels"]


def test_a_forced_openblas_core_type_is_named_where_numpy_was_decided_slower():
    [finding] = _blas(0.008, 0.005, _cpu("AMD", AVX512), HASWELL)
    assert finding.numbers["backend"] == "numpy" and finding.numbers["slower_by"] == pytest.approx(1.6, rel=0.03)
    assert finding.text.startswith("numpy@cpu matmul ran 1.60× slower [") and "OPENBLAS_CORETYPE=Haswell" in finding.text


def test_mkl_on_an_amd_cpu_is_named_where_torch_was_decided_slower():
    [finding] = _blas(0.005, 0.009, _cpu("AMD", AVX512), MKL)
    assert finding.numbers["backend"] == "torch" and "Intel MKL" in finding.text and "AMD" in finding.text


@pytest.mark.parametrize("numpy_s, torch_s, vendor, features, machine", [
    (0.005, 0.005, "AMD", AVX512, {**HASWELL, **MKL}),        # no gap: nothing to explain
    (0.008, 0.005, "AMD", ["AVX2", "FMA"], HASWELL),          # Haswell kernels are this CPU's best
    (0.008, 0.005, "AMD", AVX512, {"environment": {"OPENBLAS_CORETYPE": "SkylakeX"}}),  # AVX-512 kernels
    (0.005, 0.009, "GenuineIntel", AVX512, MKL),             # MKL on an Intel CPU: not the cause
    (0.005, 0.009, "AMD", AVX512, {"software": {"torch_blas": "open"}}),   # torch on OpenBLAS
])
def test_nothing_is_said_without_a_decided_gap_and_a_recorded_cause(numpy_s, torch_s, vendor, features, machine):
    assert _blas(numpy_s, torch_s, _cpu(vendor, features), machine) == []


def test_a_result_on_fewer_threads_than_the_baseline_says_nothing_of_its_kernels():
    """numpy on one thread is slower than numpy on two for that reason alone (seen in a real run with
    OPENBLAS_CORETYPE=Haswell: "numpy@cpu matmul ran 1.90× slower … than the fastest CPU implementation
    on all cores", of its own one-thread result)."""
    ms = [measurement("matmul", "numpy", "cpu", compute_s=seconds, threads=threads, n=1000, dtype="float32")
          for threads, seconds in ((1, 0.010), (2, 0.005))]
    devices = _cpu("AMD", AVX512)
    rows = analyse(ms, devices)
    assert any(r.speedup_all is not None and r.speedup_all.verdict() == "slower" for r in rows)
    assert [f for f in findings(rows, devices, HASWELL) if f.kind == "blas_kernels"] == []


def test_the_cause_is_read_from_a_stored_run_without_devices():
    machine = {**MKL, "inventory": {"devices": [{"id": "cpu", "vendor": "AMD", "properties": {"features": AVX512}}]}}
    [finding] = _blas(0.005, 0.009, {}, machine)
    assert finding.numbers["backend"] == "torch"
