"""Which CPU measurements stand for a problem's CPU side (baseline_key), and the all-cores baseline
that collapsed: slower on all cores than on one thread, a fact about the machine, never a denominator
(runner/speedups.py cpu_baselines leaves it out; the answer and the advice name it)."""
from __future__ import annotations

from typing import Iterable

from accelbench.results import Measurement
from accelbench.timing import stats
from accelbench.vocabulary import BASELINE_DEVICE

FRAMEWORK = "framework"  # Workload.cpu_baseline: the same backend on the CPU is the baseline


def baseline_key(m: Measurement) -> tuple:
    """What a CPU baseline stands for: the problem (workload, parameters without threads) and, where
    the workload's CPU side is the framework itself (deep learning: numpy runs none), the backend."""
    key = (m.spec.workload, tuple((k, v) for k, v in m.spec.params if k != "threads"))
    return key + (m.spec.backend,) if framework_is_cpu_baseline(m.spec.workload) else key


def framework_is_cpu_baseline(workload: str) -> bool:
    """Whether `workload` declares the candidate's own framework on the CPU as its baseline."""
    from accelbench.workloads.registry import workload_declaration

    # a stored run's workload may not be installed here (None): numpy, as before
    return workload_declaration(workload, "cpu_baseline") == FRAMEWORK


def is_baseline_measurement(m: Measurement) -> bool:
    """Any implementation on the host CPU may be a CPU baseline (numpy with its pool, torch or jax on
    the CPU ...): cpu_baselines chooses among them by measurement."""
    return m.spec.device == BASELINE_DEVICE


def collapsed_baselines(measurements: Iterable[Measurement]) -> list[tuple[Measurement, Measurement]]:
    """(all-cores result, its one-thread twin) where the all-cores one ran slower than one thread of
    the same implementation: beyond both order-statistic intervals of the median, or at all while the
    contention monitor saw other processes disturb it. A thread pool spinning on a core another
    process holds (OpenBLAS on 2 threads beside a busy process: 24.4 ms where one thread took 231 µs)
    is a fact about the machine, never a denominator."""
    cpu = [m for m in measurements if is_baseline_measurement(m) and m.valid]
    most = max((m.threads or 0 for m in cpu), default=0)
    ones = {(m.spec.backend, baseline_key(m)): m for m in cpu if m.threads == 1}
    found = []
    for m in cpu:
        one = ones.get((m.spec.backend, baseline_key(m)))
        if one is None or most <= 1 or (m.threads or 0) != most or not m.samples_s or not one.samples_s:
            continue
        mine, theirs = stats.median_ci(m.samples_s), stats.median_ci(one.samples_s)
        slower = stats.median(m.samples_s) > stats.median(one.samples_s)
        if mine[0] > theirs[1] or (slower and disturbed(m)):
            found.append((m, one))
    return found


def worst_collapse(found: list[tuple[Measurement, Measurement]]) -> tuple[Measurement, Measurement, float]:
    """The collapsed baseline to name: (all-cores result, one-thread twin, how many times slower)."""
    ratios = [(stats.median(m.samples_s) / max(stats.median(one.samples_s), 1e-300), m, one) for m, one in found]
    ratio, worst, one = max(ratios, key=lambda item: item[0])
    return worst, one, ratio


def collapse_cause(m: Measurement) -> str:
    """Why an all-cores result ran slower than one thread, as far as the run measured it."""
    if disturbed(m):
        return "other processes held the cores while it ran, and the thread pool waited for them"
    return ("no other process was seen: this size is too small to share between threads here, or the "
            "threads share one physical core")


def disturbed(m: Measurement) -> bool:
    """Whether the contention monitor saw other processes disturb the compute timing."""
    compute = ((m.telemetry or {}).get("interference") or {}).get("compute")
    return isinstance(compute, dict) and bool(compute.get("disturbed"))
