"""HTML tables for Jupyter: a Comparison's `_repr_html_` (and its short text `repr`), and a run's
results (RunResults rows).

Plain HTML with inline styles only, every value escaped: a notebook renders it as it is, and a
workload name or warning can never inject markup.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from html import escape
from typing import TYPE_CHECKING, Protocol

from accelbench.report.compare.metadata import MetadataDifference
from accelbench.report.compare.noise import NoiseBand
from accelbench.report.data import RunData
from accelbench.report.summary import params_text, spec_label, where
from accelbench.results import Spec
from accelbench.timing.stats import RatioCI
from accelbench.units import format_seconds, format_si

if TYPE_CHECKING:  # annotations only
    from accelbench.report.analysis import Row


class ShownRow(Protocol):
    """What the renderers read of one spec's comparison (compare.SpecComparison)."""

    @property
    def label(self) -> str: ...
    @property
    def median_a_s(self) -> float | None: ...
    @property
    def median_b_s(self) -> float | None: ...
    @property
    def speedup(self) -> RatioCI | None: ...
    @property
    def p_value(self) -> float | None: ...
    @property
    def noise(self) -> NoiseBand | None: ...
    @property
    def verdict(self) -> str: ...
    @property
    def note(self) -> str: ...
    def factor_text(self) -> str: ...


class Shown(Protocol):
    """What the renderers read of a compare.Comparison: described here, so that compare.py (whose
    `_repr_html_` and `__repr__` call them) is no import of this module, not even for its types."""

    @property
    def a(self) -> RunData: ...
    @property
    def b(self) -> RunData: ...
    @property
    def rows(self) -> Sequence[ShownRow]: ...
    @property
    def only_a(self) -> Sequence[Spec]: ...
    @property
    def only_b(self) -> Sequence[Spec]: ...
    @property
    def differences(self) -> Sequence[MetadataDifference]: ...
    @property
    def same_within(self) -> float: ...
    @property
    def alpha(self) -> float: ...
    @property
    def scope(self) -> str: ...
    def summary_line(self, shown: int = 3) -> str: ...
    def noise_text(self) -> str: ...
    def machine_text(self) -> str: ...

_VERDICT_COLOUR = {"faster": "#1a7f37", "slower": "#cf222e", "inconclusive": "#9a6700", "excluded": "#6e7781"}
_CELL = "padding:2px 8px;border-bottom:1px solid #ddd;"


def _table(headers: Sequence[str], rows: Iterable[Sequence[str]], right: Iterable[int] = (),
           notes: Sequence[str] = ()) -> str:
    """Cells are given already escaped (some carry a colour span). A non-empty note (escaped)
    becomes a full-width line under its row: long text must not widen the columns past the page."""
    aligned = set(right)
    head = "".join(f'<th style="{_CELL}text-align:{"right" if i in aligned else "left"}">{escape(h)}</th>'
                   for i, h in enumerate(headers))
    body = []
    for index, row in enumerate(rows):
        body.append("<tr>" + "".join(f'<td style="{_CELL}text-align:{"right" if i in aligned else "left"}'
                                     f'{";white-space:nowrap" if i in aligned else ""}">{c}</td>'
                                     for i, c in enumerate(row)) + "</tr>")
        note = notes[index] if index < len(notes) else ""
        if note:
            body.append(f'<tr class="note"><td colspan="{len(headers)}" style="{_CELL}font-size:85%;color:#57606a">{note}</td></tr>')
    return (f'<table style="border-collapse:collapse;max-width:100%"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table>')


def _verdict(verdict: str) -> str:
    colour = _VERDICT_COLOUR.get(verdict)
    text = escape(verdict)
    return f'<span style="color:{colour};font-weight:bold">{text}</span>' if colour else text


def _ratio(ci) -> str:
    from accelbench.report.compare.machine import ci_text

    return "—" if ci is None else escape(ci_text(ci))


def comparison_html(comparison: Shown) -> str:
    """The comparison as a notebook shows it: scope, summary line, one row per spec, differences."""
    c = comparison
    rows = [(escape(r.label), escape(format_seconds(r.median_a_s)), escape(format_seconds(r.median_b_s)),
             _ratio(r.speedup), escape("—" if r.p_value is None else f"{r.p_value:.2g}"),
             escape("—" if r.noise is None else r.noise.short()), _verdict(r.verdict)) for r in c.rows]
    parts = [f"<p><b>Run {escape(c.b.run_id)}</b> against baseline <b>{escape(c.a.run_id)}</b> — "
             f"{escape(c.scope)}</p>",
             f"<p>{escape(c.summary_line())}</p>",
             _table(("spec", "median A", "median B", "B vs A [95% CI]", "p (Mann–Whitney)", "run-to-run noise",
                     "verdict"), rows, right=(1, 2, 3, 4), notes=[escape(r.note) for r in c.rows]),
             f'<p style="color:#57606a">B vs A: how much slower or faster B is (time in A / time in B); "same" only when '
             f"the interval lies within ±{c.same_within:.0%} of 1; faster/slower need the interval to exclude 1, "
             f"the rank test p &lt; {c.alpha:g} and the interval outside the run-to-run noise band.</p>",
             f'<p style="color:#57606a">Run-to-run noise: {escape(c.noise_text())}</p>',
             f'<p style="color:#57606a">Machine: {escape(c.machine_text())}</p>']
    if c.differences:
        parts.append("<p><b>Recorded differences between the runs</b></p>" + _table(
            ("field", "A", "B"), ((escape(d.field), escape(d.a), escape(d.b)) for d in c.differences)))
    for title, specs in (("Only in A", c.only_a), ("Only in B", c.only_b)):
        if specs:
            items = "".join(f"<li>{escape(spec_label(s))}</li>" for s in specs)
            parts.append(f"<p><b>{title}</b> ({len(specs)})</p><ul>{items}</ul>")
    return "<div>" + "".join(parts) + "</div>"


COMPARISON_ROWS_SHOWN = 6  # spec lines in a Comparison's repr


def comparison_text(comparison: Shown) -> str:
    """`repr()` of a Comparison: the verdict first, then the changed (or undecided) specs, a few lines."""
    from accelbench.report.result_text import clip

    c = comparison
    lines = [f"Comparison: run {c.b.run_id} against baseline {c.a.run_id} ({c.scope})",
             f"  {clip(c.summary_line(), 400)}"]
    changed = [r for r in c.rows if r.verdict != "same"]
    for r in changed[:COMPARISON_ROWS_SHOWN]:
        lines.append(f"  {r.verdict}: {clip(r.label + ' ' + r.factor_text() + (' — ' + r.note if r.note else ''), 150)}")
    if len(changed) > COMPARISON_ROWS_SHOWN:
        lines.append(f"  … {len(changed) - COMPARISON_ROWS_SHOWN} more: .rows")
    return "\n".join(lines)


def _time_cell(summary) -> str:
    halfwidth = max(summary.median_s - summary.ci_low_s, summary.ci_high_s - summary.median_s)
    if summary.median_s <= 0 or math.isinf(halfwidth):
        return f"{format_seconds(summary.median_s)} (n={summary.n}, no CI)"
    return f"{format_seconds(summary.median_s)} ± {halfwidth / summary.median_s:.1%}"


def _speedup_cell(row: "Row") -> str:
    if row.baseline_role == "cpu_all_cores":
        return "baseline"
    ci = row.speedup_all
    return "—" if ci is None else f"{ci.ratio:.2f}× [{ci.low:.2f}–{ci.high:.2f}] {ci.verdict()}"


def results_table_html(rows: Sequence["Row"]) -> str:
    """One run's analysed rows (RunResults.rows) as an HTML table: time ± CI, rate, verdict, speed-up.

    Each verdict other than valid has its reasons in plain text under its row (a saved notebook or
    an HTML export shows no tooltips); an invalid result shows no time and no rate: they count nowhere."""
    cells = []
    for row in rows:
        m = row.measurement
        rate = format_si(row.rate, row.rate_unit) if m.valid and row.rate else "—"
        check = (escape(m.verdict) if m.valid
                 else f'<span style="color:#cf222e;font-weight:bold">{escape(m.verdict)}</span>')
        time = _time_cell(row.summary) if m.valid else "— (not counted)"
        cells.append((escape(m.spec.workload), escape(where(m.spec)), escape(params_text(m.spec)),
                      escape(time), escape(rate), check, escape(_speedup_cell(row))))
    notes = [escape("; ".join(_row_notes(row.measurement))) for row in rows]
    return "<div>" + _table(("workload", "where", "parameters", "median ± 95% CI", "rate", "verdict",
                             "× vs CPU all cores [95% CI]"), cells, right=(3, 4), notes=notes) + "</div>"


def _row_notes(m) -> list[str]:
    notes = [f"{m.verdict}: " + "; ".join(m.verdict_reasons)] if m.verdict != "valid" and m.verdict_reasons else []
    return notes + (["warnings: " + "; ".join(m.warnings)] if m.warnings else [])
