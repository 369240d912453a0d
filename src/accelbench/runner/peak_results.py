"""The peak finder's two figures as stored matmul results, and back.

Each becomes a matmul Measurement whose spec carries `peak=maximum` or `peak=sustained`: it is
stored, exported and imported like any result, its verdict follows its checks, and the maximum,
a valid matmul, may become the device's measured ceiling by the usual rules (store/ceilings.py).
Like every accelbench figure each carries its spread: the maximum's samples are the best burst's
batches (seconds per call of each), the sustained rate's the last windows of the hold. `extra`
holds the clock, the power and the search's coverage.
"""
from __future__ import annotations

import math
from typing import Any, Iterable

from accelbench.units import format_si

from accelbench.results import Check, Measurement, Spec, Work
from accelbench.runner.peak_finder import PeakSearch, Trial

PEAK_PARAM = "peak"
KINDS = ("maximum", "sustained")
PAIR_PROPERTY = "matmul_peak_pairs"   # an inventory device's stored pairs: {dtype: pair}


ITEM_BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}


def _measurement(spec: Spec, n: int, samples_s: tuple[float, ...], check: Check, extra: dict[str, Any]) -> Measurement:
    # A, B and C once each, as workloads/matmul.py counts them: the roofline places it like any matmul
    moved = 3.0 * n * n * ITEM_BYTES.get(str(spec.param("dtype")), 4)
    return Measurement(spec=spec, phases_s={"compute": samples_s}, first_call_s=samples_s[0],
                       work=Work(flops=2.0 * n**3, bytes_moved=moved), check=check, extra=extra,
                       verdict="valid" if check.passed else "invalid")


def _seconds_per_call(trial: Trial) -> float:
    return 2.0 * trial.n**3 / trial.rate if trial.rate else float("inf")


def search_measurements(search: PeakSearch, backend: str, device: str, dtype: str,
                        check: Check) -> list[Measurement]:
    """The maximum and the sustained rate of `search` as results (none where it found neither)."""
    common = {"peak_coverage": search.coverage, "peak_orders_tried": [t.n for t in search.trials],
              "peak_budget_s": search.budget_s}
    out = []
    best = search.maximum
    if best is not None:
        spec = Spec.make("matmul", backend, device, n=best.n, dtype=dtype, peak="maximum")
        out.append(_measurement(spec, best.n, best.batch_s or (_seconds_per_call(best),), check,
                                {**common, "clock_mhz": best.clock_mhz, "power_w": best.power_w}))
    held = search.sustained
    if held is not None and search.final_check is not None:
        spec = Spec.make("matmul", backend, device, n=held.n, dtype=dtype, peak="sustained")
        span = held.windows[-held.counted:]
        out.append(_measurement(spec, held.n, tuple(_seconds_per_call(w) for w in span), search.final_check,
                                {**common, "clock_mhz": held.clock_mhz, "power_w": held.power_w,
                                 "settled": held.settled, "held_s": round(held.held_s, 3),
                                 "sustained_flops": held.rate}))
    return out


def peak_pairs(results: Iterable[tuple[Measurement, str]]) -> dict[tuple[str, str], dict[str, Any]]:
    """(device, dtype) -> the latest stored pair: {"maximum": {...}, "sustained": {...}}, each with
    its rate (FLOP/s), order, clock, power, coverage and run."""
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for m, run_id in results:
        kind = m.spec.param(PEAK_PARAM)
        if kind not in KINDS or not m.trusted or not m.samples_s:
            continue
        seconds = sorted(m.samples_s)[len(m.samples_s) // 2]
        rate = m.extra.get("sustained_flops") if kind == "sustained" else m.work.flops / seconds
        key = (m.spec.device, str(m.spec.param("dtype")))
        entry = {"rate_flops": rate, "n": m.spec.param("n"), "backend": m.spec.backend, "run_id": run_id,
                 "clock_mhz": m.extra.get("clock_mhz"), "power_w": m.extra.get("power_w"),
                 "coverage": m.extra.get("peak_coverage", ""), **rate_spread(m.work.flops, m.samples_s)}
        if kind == "sustained":
            entry["settled"] = bool(m.extra.get("settled"))
        pair = pairs.setdefault(key, {})
        if pair.get("run_id") != run_id:  # a later run's pair replaces an earlier one whole
            pair.clear()
            pair["run_id"] = run_id
        pair[kind] = entry
    return pairs


def rate_spread(flops: float, samples_s: tuple[float, ...]) -> dict[str, Any]:
    """The rate's 95% interval from the samples' median interval: {"samples", "ci_low_flops",
    "ci_high_flops"}; the interval is None with fewer samples than it needs (stats.median_ci)."""
    from accelbench.timing import stats

    low_s, high_s = stats.median_ci(samples_s) if len(samples_s) >= 2 else (math.nan, math.nan)
    finite = math.isfinite(low_s) and math.isfinite(high_s) and low_s > 0
    return {"samples": len(samples_s), "ci_low_flops": flops / high_s if finite else None,
            "ci_high_flops": flops / low_s if finite else None}


def _facts(kind: str, entry: dict[str, Any]) -> str:
    facts = [f"n={entry['n']}", f"{entry['clock_mhz']:,.0f} MHz" if entry.get("clock_mhz") else "clock unknown"]
    if entry.get("power_w"):
        facts.append(f"{entry['power_w']:,.0f} W")
    if kind == "sustained":
        facts.append("settled" if entry.get("settled") else "not settled in the budget")
    return " · ".join(facts)


def _spread(kind: str, entry: dict[str, Any]) -> str:
    what = "batches of the best burst" if kind == "maximum" else "windows of the hold"
    low, high = entry.get("ci_low_flops"), entry.get("ci_high_flops")
    if low is None or high is None:
        return f"{entry.get('samples', 0)} {what}, too few for an interval"
    return f"95% CI {format_si(low, 'FLOP/s')}–{format_si(high, 'FLOP/s')}, {entry['samples']} {what}"


def pair_lines(dtype: str, pair: dict[str, Any], width: int = 72) -> list[str]:
    """The pair as short lines (each within `width`): per kind its rate and interval, then its
    order, clock, power and settling; then the search's coverage, wrapped.

        bfloat16 maximum 794 TFLOP/s (n=8192 · 1,980 MHz · 690 W)
          95% CI 790 TFLOP/s–797 TFLOP/s, 7 batches of the best burst
    """
    import textwrap

    lines = []
    for kind in KINDS:
        entry = pair.get(kind)
        if entry:
            lines += textwrap.wrap(f"{dtype} {kind} {format_si(entry['rate_flops'], 'FLOP/s')} "
                                   f"({_facts(kind, entry)})", width, subsequent_indent="  ")
            lines += textwrap.wrap(_spread(kind, entry), width, initial_indent="  ", subsequent_indent="  ")
    coverage = next((pair[k].get("coverage") for k in KINDS if pair.get(k, {}).get("coverage")), "")
    if coverage:
        lines += textwrap.wrap(f"search: {coverage}", width, initial_indent="  ", subsequent_indent="    ")
    return lines


def pair_json(pair: dict[str, Any]) -> dict[str, Any]:
    """The pair for --json output: each kind's figures as stored (rates in FLOP/s)."""
    return {kind: dict(pair[kind]) for kind in KINDS if pair.get(kind)} | {"run_id": pair.get("run_id")}
