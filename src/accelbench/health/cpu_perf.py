"""The CPU's achieved matmul and STREAM rates, measured by the run command's own harness
(runner.execute.measure_item on a PlanItem), judged against the best-founded expectation.

A machine that other processes kept busy while we measured is inconclusive, never a failure:
timing.contention's Interference.disturbed decides, and the finding quotes its figures.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass

from accelbench.health import expected as exp
from accelbench.health.model import FAIL, INCONCLUSIVE, PASS, SKIP, HealthFinding, finding, ratio_status

SEED = 20240607
# level -> (matmul order, STREAM elements, rigor, seconds a step may take)
SIZES = {"quick": (1000, 2**23, "quick", 30.0), "standard": (1000, 2**23, "standard", 45.0),
         "long": (2000, 2**24, "rigorous", 120.0)}


@dataclass(frozen=True)
class Step:
    check: str
    workload: str
    params: dict
    metric: str          # peak metric the rate is judged against
    unit: str


def steps(level: str) -> list[Step]:
    order, elements, _, _ = SIZES[level]
    return [Step("cpu.matmul", "matmul", {"n": order, "dtype": "float32"}, "fp32", "FLOP/s"),
            Step("cpu.stream", "stream", {"kernel": "triad", "n": elements, "dtype": "float64"},
                 "memory_bandwidth", "B/s")]


def measure(step: Step, level: str, threads: int, device):
    """(Measurement, None) or (None, why it could not be measured)."""
    from accelbench.backends.registry import get_backend
    from accelbench.results import Spec
    from accelbench.runner import deadline
    from accelbench.runner.execute import TrustContext, measure_item
    from accelbench.runner.plan import PlanItem
    from accelbench.timing.checkpoint import TimedOut
    from accelbench.timing.rigor import get_rigor

    backend = get_backend("numpy")
    if not backend.availability().ok:
        return None, f"numpy backend unavailable: {backend.availability().reason}"
    item = PlanItem(Spec.make(step.workload, "numpy", "cpu", **step.params, threads=threads), threads)
    trust = TrustContext(devices={"cpu": device} if device is not None else {}, probe_sync=False)
    limit_s = SIZES[level][3]
    try:
        with deadline.spec_timeout(limit_s), deadline.spec_scope(), backend.threads(threads):
            return measure_item(item, backend, get_rigor(SIZES[level][2]), SEED, trust=trust), None
    except TimedOut:
        return None, f"did not finish within {limit_s:.0f} s"
    except Exception as exc:  # noqa: BLE001 - a CPU that cannot run the workload is the finding
        return None, f"{type(exc).__name__}: {exc}"


def rate(m, metric: str) -> float | None:
    median_s = statistics.median(m.samples_s) if m.samples_s else 0.0
    amount = m.work.bytes_moved if metric == "memory_bandwidth" else m.work.flops
    return amount / median_s if median_s > 0 and amount > 0 else None


def judge(step: Step, m, expectation: exp.Expected | None, elapsed_s: float) -> HealthFinding:
    value = rate(m, step.metric)
    interference = (m.telemetry or {}).get("interference", {}).get("compute") or {}
    base = dict(unit=step.unit, elapsed_s=elapsed_s, extra={"interference": interference, "verdict": m.verdict})
    if not m.check.passed or m.verdict == "invalid" or value is None:
        why = "; ".join(m.verdict_reasons) or m.check.detail
        return finding(step.check, "cpu", FAIL, f"{step.workload} gave a wrong or impossible result: {why}",
                       measured=value, **base)
    if expectation is None:
        return finding(step.check, "cpu", SKIP, f"{step.workload} reached {_shown(value, step.unit)}; nothing to "
                       "judge it by: no history, fleet median, datasheet or formula (run `accelbench run "
                       f"{step.workload}` once on a healthy node to set one)", measured=value, **base)
    ratio = value / expectation.value
    status = ratio_status(ratio, expectation.warn_below, expectation.fail_below)
    summary = (f"{step.workload} {_shown(value, step.unit)}, {ratio:.0%} of the expected "
               f"{_shown(expectation.value, step.unit)} ({expectation.source})")
    if status != PASS and interference.get("disturbed"):
        status, summary = INCONCLUSIVE, f"{summary}: inconclusive, the machine was busy ({_busy(interference)})"
    return finding(step.check, "cpu", status, summary, measured=value, expected=expectation.value,
                   source=expectation.source, detail=expectation.detail, **base)


def _busy(interference: dict) -> str:
    others = interference.get("others_share")
    wait = interference.get("run_wait_share")
    parts = [f"other processes used {others:.0%} of the cores"] if others is not None else []
    parts += [f"our threads waited for a CPU {wait:.0%} of the time"] if wait is not None else []
    return "; ".join(parts) or "interference measured"


def _shown(value: float, unit: str) -> str:
    return f"{value / 1e9:.1f} G{unit}"


def expectation(step: Step, device, scale: float, scale_note: str, db_path: str | None,
                hostname: str, extra: list[exp.Expected] | None = None, threads: int | None = None
                ) -> exp.Expected | None:
    """The best-founded expected rate. This machine's history is its own past runs of this very
    step (exp.own_history), not the device's overall measured ceiling, which from_device would give."""
    candidates = [e for e in exp.from_device(device, step.metric, scale, scale_note) if e.source != exp.HISTORY]
    own = exp.own_history(db_path, hostname, {"cpu": device} if device is not None else {},
                          lambda m: _same(m, step, threads), lambda m: rate(m, step.metric), step.check)
    fleet = exp.fleet_median(db_path, hostname, lambda m: _same(m, step), lambda m: rate(m, step.metric))
    return exp.best(candidates + list(extra or []) + [e for e in (own, fleet) if e is not None])


def _same(m, step: Step, threads: int | None = None) -> bool:
    """The same step: workload, dtype and kernel; with `threads`, also as many threads and, for
    STREAM, arrays at least as large (a smaller one may sit in a cache and run faster)."""
    spec = m.spec
    same = (spec.workload == step.workload and spec.device == "cpu"
            and all(spec.param(k) == v for k, v in step.params.items() if k != "n"))
    if not same or threads is None:
        return same
    n = spec.param("n")
    big_enough = step.metric != "memory_bandwidth" or (isinstance(n, int) and n >= step.params["n"])
    return spec.param("threads") == threads and big_enough


def perf_findings(level: str, device, threads: int, scale: float, scale_note: str, db_path: str | None,
                  hostname: str, theory: exp.Expected | None = None) -> list[HealthFinding]:
    import time

    found = []
    for step in steps(level):
        start_s = time.monotonic()
        m, why = measure(step, level, threads, device)
        elapsed_s = time.monotonic() - start_s
        if m is None:
            found.append(finding(step.check, "cpu", FAIL, f"{step.workload}: {why}", elapsed_s=elapsed_s))
            continue
        extra = [theory] if theory is not None and step.metric == "memory_bandwidth" else []
        found.append(judge(step, m, expectation(step, device, scale, scale_note, db_path, hostname, extra, threads),
                           elapsed_s))
    return found
