"""Why one CPU framework's matmul trails another's on the same cores: the BLAS kernels it runs.

On one CPU, numpy, torch and jax multiply matrices with different libraries (OpenBLAS, Intel MKL,
XLA's own kernels), and two causes of a large gap can be read from what a run stores:

- `OPENBLAS_CORETYPE` naming a core without AVX-512 on a CPU that has it: OpenBLAS then runs those
  older kernels (on a 2-core Zen 5 VM with `OPENBLAS_CORETYPE=Haswell`, numpy's float32 matmul at
  n=1000 took 15.6 ms on one thread against 8.2 ms with OpenBLAS's own choice);
- torch's CPU build calling Intel MKL on an AMD CPU: Intel's optimization notice for MKL says it
  may not optimise to the same degree for non-Intel microprocessors (on the same VM, torch's float32
  matmul n=1000 on one thread took 18.2 ms, 110 GFLOP/s, against numpy's 8.2 ms).

A finding is made only where the measurements decided the gap: the framework's speed-up against the
fastest CPU implementation on all cores says "slower".
"""
from __future__ import annotations

from typing import Any

from accelbench.report.analysis import Row
from accelbench.report.findings import INFO, Finding
from accelbench.report.ratio_text import oriented, number
from accelbench.health.cpu_config import NO_AVX512_CORETYPES


def blas_kernels(rows: list[Row], devices: dict, machine: dict) -> list[Finding]:
    """A finding for each CPU framework whose matmul, on as many threads as the all-cores baseline,
    was decided slower than it, where the run's records name the kernels' cause. Fewer threads are
    slower for that reason alone: numpy on one thread says nothing of its kernels."""
    matmul = [r for r in rows if r.spec.workload == "matmul" and r.spec.device == "cpu" and r.measurement.valid]
    all_cores = max((r.measurement.threads or 0 for r in matmul), default=0)
    slower = [r for r in matmul if (r.measurement.threads or 0) == all_cores
              and r.speedup_all is not None and r.speedup_all.verdict() == "slower"]
    vendor, features = _cpu(devices, machine)
    found = []
    for backend in sorted({r.spec.backend for r in slower}):
        cause = _cause(backend, vendor, features, machine)
        if not cause:
            continue
        worst = min((r for r in slower if r.spec.backend == backend), key=lambda r: r.speedup_all.ratio)  # type: ignore[union-attr]
        said = oriented(worst.speedup_all)
        params = " ".join(f"{k}={v}" for k, v in worst.spec.params if k != "threads")
        found.append(Finding("blas_kernels", INFO, (
            f"{backend}@cpu matmul ran {number(said.value)}× slower [{number(said.low)}–{number(said.high)}] than "
            f"the fastest CPU implementation on all cores ({params}): {cause}."),
            {"backend": backend, "slower_by": said.value, "cause": cause}))
    return found


def _cause(backend: str, vendor: str, features: set[str], machine: dict) -> str:
    environment = machine.get("environment") or {}
    software = machine.get("software") or {}
    coretype = str(environment.get("OPENBLAS_CORETYPE", "")).strip()
    if backend == "numpy" and coretype.lower() in NO_AVX512_CORETYPES and "AVX-512F" in features:
        return (f"OPENBLAS_CORETYPE={coretype} in the environment makes numpy's OpenBLAS run {coretype} kernels, "
                f"without AVX-512, on this CPU that has it (unset it to let OpenBLAS choose; `accelbench check` "
                f"warns of it)")
    if backend == "torch" and software.get("torch_blas") == "mkl" and vendor.upper().startswith("AMD"):
        return ("torch's CPU matmul calls Intel MKL, which Intel's optimization notice says may not optimise to "
                "the same degree for non-Intel processors, and this CPU is an AMD one")
    return ""


def _cpu(devices: dict, machine: dict) -> tuple[str, set[str]]:
    """The CPU's vendor and instruction-set features, from the run's devices or its stored inventory."""
    cpu = devices.get("cpu")
    if cpu is not None:
        return str(getattr(cpu, "vendor", "") or ""), set(cpu.properties.get("features") or ())
    for entry in (machine.get("inventory") or {}).get("devices", ()):
        if entry.get("id") == "cpu":
            properties: dict[str, Any] = entry.get("properties") or {}
            return str(entry.get("vendor") or properties.get("vendor") or ""), set(properties.get("features") or ())
    return "", set()
