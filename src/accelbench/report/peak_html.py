"""The report's table of `accelbench peak`'s pair: the maximum and the sustained matmul rate of each
device and dtype the run searched, with the order, clock, power, spread, settling and coverage."""
from __future__ import annotations

import html

from accelbench.report.data import RunData
from accelbench.runner.peak_results import KINDS, peak_pairs
from accelbench.units import format_si

HEADERS = ("device", "dtype", "figure", "rate", "95% CI", "order", "clock", "power", "settled", "search")


def _interval(entry: dict) -> str:
    low, high = entry.get("ci_low_flops"), entry.get("ci_high_flops")
    if low is None or high is None:
        return f"— ({entry.get('samples', 0)} samples: too few)"
    return f"{format_si(low, 'FLOP/s')}–{format_si(high, 'FLOP/s')} ({entry['samples']} samples)"


def peak_pair_html(run: RunData) -> str:
    """A small table where the run holds a peak pair; nothing otherwise."""
    pairs = peak_pairs((m, run.run_id) for m in run.measurements)
    if not pairs:
        return ""
    rows = []
    for (device, dtype), pair in sorted(pairs.items()):
        for kind in KINDS:
            entry = pair.get(kind)
            if not entry:
                continue
            clock, power = entry.get("clock_mhz"), entry.get("power_w")
            settled = ("yes" if entry.get("settled") else "no, the budget ended first") if kind == "sustained" else "—"
            what = "maximum (best burst, its batches)" if kind == "maximum" else "sustained (last windows of the hold)"
            cells = (device, dtype, what, format_si(entry["rate_flops"], "FLOP/s"), _interval(entry),
                     f"n={entry['n']}", f"{clock:,.0f} MHz" if clock else "unknown",
                     f"{power:,.0f} W" if power else "unknown", settled, entry.get("coverage") or "—")
            rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in HEADERS)
    return ('<h3 id="peak-pair">Maximum and sustained matmul rate (accelbench peak)</h3>'
            f'<table class="peak-pair"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
            '<p class="small">Maximum: the best verified order after a short warm-up, its rate the median of '
            "the best burst's batches. Sustained: that order held until the rate settled (2% over the last "
            "windows) or the budget ended. Neither is a CPU baseline or part of any speed-up.</p>")
