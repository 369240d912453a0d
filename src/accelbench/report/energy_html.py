"""The report's energy table: each result's measured energy, per call, and work per joule.

Only results whose telemetry measured energy (an energy counter, or power sampled often enough to
integrate) appear; with none, no table. Plain markup in the report's table style; every text from
data is escaped.
"""
from __future__ import annotations

import html

from accelbench.report.data import RunData
from accelbench.report.figures_telemetry import energy_rows
from accelbench.units import format_si

HEADERS = ("result", "where", "parameters", "device measured", "energy in the timed window",
           "energy per call", "mean power", "work per joule", "method")


def _esc(value: object) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _joules(value: object, uncertainty: object = None) -> str:
    if not isinstance(value, (int, float)):
        return "—"
    text = format_si(float(value), "J")
    return text + (f" ± {format_si(float(uncertainty), 'J')}" if isinstance(uncertainty, (int, float)) else "")


def energy_html(run: RunData) -> str:
    entries = energy_rows(run.rows)
    if not entries:
        return ""
    body = []
    for e in entries:
        power = format_si(float(e["mean_power_w"]), "W") if isinstance(e["mean_power_w"], (int, float)) else "—"
        per_j = format_si(e["work_per_j"], e["work_unit"]) if e["work_per_j"] else "—"
        cells = [_esc(f"{e['workload']} ({e['status']})"), _esc(e["series"]), _esc(e["params"]), _esc(e["device"]),
                 _esc(_joules(e["energy_j"], e["uncertainty_j"])), _esc(_joules(e["per_call_j"])), _esc(power),
                 _esc(per_j), _esc(e["method"])]
        body.append("<tr>" + "".join(f'<td class="num">{c}</td>' if 4 <= i <= 7 else f"<td>{c}</td>"
                                     for i, c in enumerate(cells)) + "</tr>")
    head = "".join(f"<th>{_esc(h)}</th>" for h in HEADERS)
    return ('<h3 id="energy">Energy per result</h3><div class="scroll"><table><thead><tr>' + head
            + "</tr></thead><tbody>" + "".join(body) + "</tbody></table></div>"
            '<p class="small">Energy of the device over each result\'s timed window, from its energy counter or '
            "integrated power samples (method column); per call divides by the timed calls. Work per joule: the "
            "workload's FLOP (or bytes where it does no arithmetic) per call over the energy per call.</p>")
