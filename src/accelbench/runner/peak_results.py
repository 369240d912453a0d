"""The peak finder's two figures as stored matmul results, and back.

Each becomes a matmul Measurement whose spec carries `peak=maximum` or `peak=sustained`: it is
stored, exported and imported like any result, its verdict follows its checks, and the maximum,
a valid matmul, may become the device's measured ceiling by the usual rules (store/ceilings.py).
`extra` holds the clock, the power and the search's coverage.
"""
from __future__ import annotations

from typing import Any, Iterable

from accelbench.results import Check, Measurement, Spec, Work
from accelbench.runner.peak_finder import PeakSearch, Trial

PEAK_PARAM = "peak"
KINDS = ("maximum", "sustained")


def _measurement(spec: Spec, n: int, samples_s: tuple[float, ...], check: Check, extra: dict[str, Any]) -> Measurement:
    return Measurement(spec=spec, phases_s={"compute": samples_s}, first_call_s=samples_s[0],
                       work=Work(flops=2.0 * n**3, bytes_moved=0.0), check=check, extra=extra,
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
        out.append(_measurement(spec, best.n, (_seconds_per_call(best),), check,
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
                 "coverage": m.extra.get("peak_coverage", "")}
        if kind == "sustained":
            entry["settled"] = bool(m.extra.get("settled"))
        pair = pairs.setdefault(key, {})
        if pair.get("run_id") != run_id:  # a later run's pair replaces an earlier one whole
            pair.clear()
            pair["run_id"] = run_id
        pair[kind] = entry
    return pairs


def pair_text(dtype: str, pair: dict[str, Any]) -> str:
    """'bf16: maximum 794 TFLOP/s (n=8192, 1,980 MHz, 690 W) · sustained 688 (1,605 MHz, 700 W, settled)'."""
    parts = []
    for kind in KINDS:
        entry = pair.get(kind)
        if not entry:
            continue
        facts = [f"n={entry['n']}"]
        if entry.get("clock_mhz"):
            facts.append(f"{entry['clock_mhz']:,.0f} MHz")
        if entry.get("power_w"):
            facts.append(f"{entry['power_w']:,.0f} W")
        if kind == "sustained":
            facts.append("settled" if entry.get("settled") else "not settled in the budget")
        parts.append(f"{kind} {entry['rate_flops'] / 1e12:,.3g} TFLOP/s ({', '.join(facts)})")
    return f"{dtype}: " + " · ".join(parts)
