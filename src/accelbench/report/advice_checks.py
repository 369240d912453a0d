"""Findings that say a number is not to be trusted as it stands: wrong device, failed checks,
a CPU baseline short of cores, unstable measurements, and what would help.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any

from accelbench.report.findings import INFO, IQR_UNSTABLE, WARNING, Finding
from accelbench.report.data import series_label
from accelbench.report.analysis import Row
from accelbench.runner.cpu_baseline import collapse_cause, collapsed_baselines, worst_collapse
from accelbench.timing import stats
from accelbench.units import format_seconds
from accelbench.verdict import DRIFT, UNSTABLE, Caveat


def _params(spec) -> str:
    return " ".join(f"{k}={v}" for k, v in spec.params if k != "threads")


def _ran_elsewhere(row: Row) -> bool:
    check = row.measurement.check
    return not check.passed and bool(check.device_seen) and check.device_seen != row.spec.device


def wrong_device(rows: list[Row]) -> list[Finding]:
    """Results whose output lived on another device than asked (a silent CPU fallback)."""
    grouped: dict[tuple[str, str, str], list[Row]] = defaultdict(list)
    for row in rows:
        if _ran_elsewhere(row):
            seen = row.measurement.check.device_seen or "another device"
            grouped[(row.spec.backend, row.spec.device, seen)].append(row)
    out = []
    for (backend, asked, seen), items in grouped.items():
        examples = "; ".join(f"{r.spec.workload} {_params(r.spec)}" for r in items[:3])
        out.append(Finding("wrong_device", WARNING, (
            f"{len(items)} result(s) asked of {backend} on {asked} ran on {seen} ({examples}): "
            f"their times are not counted. The framework fell back silently, as TensorFlow does when it "
            f"ignores a GPU it does not support; check the driver and the framework's device support."),
            {"backend": backend, "asked": asked, "seen": seen, "count": len(items)}))
    return out


def check_failures(rows: list[Row]) -> list[Finding]:
    """Outputs on the right device but too far from the float64 reference."""
    out = []
    for row in rows:
        check = row.measurement.check
        if check.passed or _ran_elsewhere(row):
            continue
        out.append(Finding("check_failed", WARNING, (
            f"{row.spec.workload} {_params(row.spec)} on {series_label(row.spec)} failed its check "
            f"(relative error {check.max_rel_error:.1e}, tolerance {check.tolerance:.1e}): "
            f"its time is not counted."),
            {"series": series_label(row.spec), "workload": row.spec.workload,
             "rel_error": check.max_rel_error, "tolerance": check.tolerance}))
    for row in rows:
        m = row.measurement
        if m.check.passed and not m.valid:  # passed its check, invalid all the same (rate, sync, placement)
            out.append(Finding("invalid", WARNING, (
                f"{row.spec.workload} {_params(row.spec)} on {series_label(row.spec)} is invalid: "
                f"{'; '.join(m.verdict_reasons)}. Its time is not counted."),
                {"series": series_label(row.spec), "workload": row.spec.workload,
                 "reasons": list(m.verdict_reasons)}))
    return out


def recorded_usable_cpus(devices: dict, machine: dict) -> int | None:
    """The CPUs the run could use, as its inventory recorded them (not this process's: vocabulary.usable_cpus)."""
    cpu = devices.get("cpu")
    value = cpu.properties.get("usable_cpus") if cpu is not None else None
    if value is None:
        for entry in (machine.get("inventory") or {}).get("devices", ()):
            if entry.get("id") == "cpu":
                value = (entry.get("properties") or {}).get("usable_cpus")
    return int(value) if isinstance(value, (int, float)) and value > 0 else None


def thread_baseline(rows: list[Row], devices: dict, machine: dict) -> list[Finding]:
    """A CPU baseline on fewer threads than the machine can use makes every speed-up look bigger."""
    cores = recorded_usable_cpus(devices, machine)
    if not cores:
        return []
    short = [r for r in rows if r.baseline_role == "cpu_all_cores" and r.measurement.threads
             and r.measurement.threads < cores]
    if not short:
        return []
    threads = min(r.measurement.threads or cores for r in short)  # all set: `short` keeps only those
    return [Finding("cpu_baseline_threads", WARNING, (
        f"The CPU baseline ran on {threads} thread(s) but {cores} CPUs are usable: speed-ups against "
        f"the CPU are overstated by up to {cores / threads:.1f}× ({len(short)} baseline result(s)). "
        f"Rerun without a thread limit (unset OMP_NUM_THREADS and friends)."),
        {"baseline_threads": threads, "usable_cpus": cores, "count": len(short)})]


def _instability(rows: list[Row]) -> dict[str, list[Row]]:
    kinds: dict[str, list[Row]] = {"iqr": [], "target": [], "drift": []}
    for row in rows:
        compute = {w.kind for w in map(Caveat, row.measurement.warnings) if w.phase == "compute"}
        if UNSTABLE in compute:
            kinds["iqr"].append(row)
        if not row.measurement.target_met:
            kinds["target"].append(row)
        if DRIFT in compute:
            kinds["drift"].append(row)
    return kinds


def unstable(rows: list[Row], rigor: str | None) -> list[Finding]:
    kinds = _instability(rows)
    flagged = {id(r) for items in kinds.values() for r in items}
    if not flagged:
        return []
    parts: list[str] = []
    numbers: dict[str, Any] = {"flagged": len(flagged), "total": len(rows)}
    if kinds["iqr"]:
        worst = max(kinds["iqr"], key=lambda r: r.summary.rel_iqr)
        parts.append(f"{len(kinds['iqr'])} with an IQR above {IQR_UNSTABLE:.0%} of the median (worst: "
                     f"{worst.spec.workload} {_params(worst.spec)} on {series_label(worst.spec)}, "
                     f"{worst.summary.rel_iqr:.0%})")
        numbers.update(unstable_iqr=len(kinds["iqr"]), worst_rel_iqr=worst.summary.rel_iqr)
    if kinds["target"]:
        worst = max(kinds["target"], key=lambda r: r.summary.rel_ci_halfwidth)
        widest = worst.summary.rel_ci_halfwidth
        widest_text = (f"widest: ±{widest:.0%}" if widest != float("inf")  # not "widest: undefined"
                       else f"one had {worst.summary.n} samples, too few for an interval")
        parts.append(f"{len(kinds['target'])} missed the confidence-interval target ({widest_text})")
        numbers.update(target_missed=len(kinds["target"]), widest_rel_ci=None if widest == float("inf") else widest)
    if kinds["drift"]:
        parts.append(f"{len(kinds['drift'])} drifted during sampling (throttling or a neighbour's load)")
        numbers["drift"] = len(kinds["drift"])
    return [Finding("unstable", WARNING if len(flagged) * 4 >= len(rows) else INFO,
                    f"{len(flagged)} of {len(rows)} measurements are not steady: {'; '.join(parts)}. "
                    + _what_helps(rigor, numbers), numbers)]


def _what_helps(rigor: str | None, numbers: dict[str, Any]) -> str:
    from accelbench.timing.rigor import RIGORS

    current = RIGORS.get(rigor or "")
    helps = []
    if current is None or current.name != "rigorous":
        budget = f" instead of {current.budget_s:g} s" if current else ""
        helps.append(f"a longer budget (--rigor rigorous: {RIGORS['rigorous'].budget_s:g} s per "
                     f"measurement{budget})")
        numbers["budget_s"] = current.budget_s if current else None
    helps.append("a quieter machine (no other jobs; on a shared node an exclusive allocation, "
                 "e.g. salloc --exclusive)")
    return "What would help: " + " and ".join(helps) + "."


def cpu_scaling(rows: list[Row]) -> list[Finding]:
    """The CPU on all cores slower than on one thread (runner/cpu_baseline.py collapsed_baselines, the one
    derivation the baselines and the answer's caveat read too): the cores were busy elsewhere, or the
    work too small to share. Such a result is no baseline; said as a fact about the machine."""
    found = collapsed_baselines([r.measurement for r in rows])
    if not found:
        return []

    worst, one, ratio = worst_collapse(found)
    threads = worst.threads or 0
    named = sorted({m.spec.backend for m, _ in found})
    return [Finding("cpu_scaling", WARNING, (
        f"The CPU on {threads} threads ran slower than on one ({', '.join(named)}) in {len(found)} "
        f"comparison{'s' if len(found) != 1 else ''} (up to {ratio:.2f}× slower: "
        f"{format_seconds(stats.median(worst.samples_s))} against {format_seconds(stats.median(one.samples_s))}, "
        f"{worst.spec.workload} {_params(worst.spec)}): {collapse_cause(worst)}. It is no baseline: speed-ups against all cores there use "
        "another CPU implementation, or are not stated. Rerun on a quieter machine."),
        {"slower_on_all_cores": len(found), "all_cores_threads": threads,
         "worst_ratio": ratio})]
