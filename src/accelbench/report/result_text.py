"""One result in one line, for `repr()` in a notebook: what it measured, its time, its verdict and why.

Duck-typed over report/analysis.py's Row (no import of it, so Row.__repr__ can use this module):
`row.measurement`, `row.summary`, `row.rate`, `row.rate_unit`, `row.speedup_all`, `row.baseline_role`.
An invalid result shows no time and no rate (they count nowhere), only why it is invalid.
"""
from __future__ import annotations

import math
from typing import Any

from accelbench.report import ratio_text
from accelbench.units import format_seconds, format_si

LINE_CHARS = 160  # a line of a text repr at most (a reason longer than that is cut, with "…")


def clip(text: str, limit: int = LINE_CHARS) -> str:
    text = " ".join(str(text).split())  # a reason with newlines (a traceback) stays one line
    return text if len(text) <= limit else text[: limit - 1] + "…"


def threads_text(threads: Any) -> str:
    return f" ({threads} thread{'s' if threads != 1 else ''})" if threads else ""


def spec_text(spec) -> str:
    """"matmul numpy@cpu (2 threads) dtype=float32 n=1000"."""
    params = " ".join(f"{k}={v}" for k, v in spec.params if k != "threads")
    where = f"{spec.backend}@{spec.device}{threads_text(spec.param('threads'))}"
    return " ".join(p for p in (spec.workload, where, params) if p)


def time_text(summary) -> str:
    """"6.58 ms ± 4.7%" (the 95% interval of the median, as a share of it)."""
    median_s = summary.median_s
    halfwidth = max(median_s - summary.ci_low_s, summary.ci_high_s - median_s)
    if median_s <= 0 or not math.isfinite(halfwidth):
        return f"{format_seconds(median_s)} (n={summary.n}, no interval)"
    return f"{format_seconds(median_s)} ± {halfwidth / median_s:.1%}"


def verdict_text(measurement) -> str:
    """"valid", or the verdict with its first reason: "invalid: relative error 5.00e-01 …"."""
    reasons = list(getattr(measurement, "verdict_reasons", ()) or ())
    if measurement.verdict == "valid" or not reasons:
        return measurement.verdict
    return f"{measurement.verdict}: {reasons[0]}"


def speedup_text(row) -> str:
    if row.baseline_role:  # its threads are in the spec's text: no "all cores" claim for a 1-thread-only run
        return "a CPU baseline"
    ratio = row.speedup_all
    return "" if ratio is None else f"vs the CPU on all cores: {ratio_text.phrase(ratio)}"


def row_line(row, limit: int = LINE_CHARS) -> str:
    """"softmax numpy@cpu (2 threads) dtype=float64: 6.58 ms ± 4.7%, 12.1 GFLOP/s; valid"."""
    m = row.measurement
    if not m.valid:
        return clip(f"{spec_text(m.spec)}: not counted, {verdict_text(m)}", limit)
    figures = [time_text(row.summary)]
    if row.rate:
        figures.append(format_si(row.rate, row.rate_unit))
    speed = speedup_text(row)
    if speed:
        figures.append(speed)
    return clip(f"{spec_text(m.spec)}: {', '.join(figures)}; {verdict_text(m)}", limit)
