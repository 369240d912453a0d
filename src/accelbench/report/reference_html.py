"""The report's section on the tutorials' published figures: each matching result of the run placed
among them (fastest first), with the differences that matter named under it."""
from __future__ import annotations

from html import escape

from accelbench.report.compare.compare import spec_label
from accelbench.report.compare.reference import UserFigure, place_run
from accelbench.report.data import RunData
from accelbench.units import format_seconds


def reference_html(run: RunData) -> str:
    """'' when no result of the run matches a published benchmark."""
    parts = []
    for placement in place_run(run):
        if not placement.user:
            continue
        rows = []
        for value_s, _, item in placement.ordered():
            if isinstance(item, UserFigure):
                who = f"<b>this run: {escape(spec_label(item.measurement.spec))}</b> on {escape(item.device_name)}"
                notes = "".join(f"<li>{escape(text)}</li>" for text in item.differences)
                how = f'<div class="small">{escape(item.how)}</div><ul class="small">{notes}</ul>'
            else:
                who = f"{escape(item.device)} ({escape(item.software)})"
                how = f'<div class="small">{escape(item.citation())}</div>'
            rows.append(f'<tr><td class="num">{escape(format_seconds(value_s))}</td><td>{who}{how}</td></tr>')
        benchmark = placement.benchmark
        parts.append(f"<h3>{escape(benchmark.title)}</h3><p class=\"small\">{escape(benchmark.unit)}, fastest "
                     "first</p><table><tr><th>time</th><th>who, and how it differs</th></tr>"
                     + "".join(rows) + "</table>")
    if not parts:
        return ""
    return ("<h2>Against the tutorials' published figures</h2><p class=\"meta\">Other machines and software "
            "stacks: context, not a controlled comparison.</p>" + "".join(parts))
