"""A run as a notebook shows it: a short text `repr()` and an HTML `_repr_html_`, the answer first.

The text is a few lines (under 2,000 characters however large the run): the run's state and counts,
the answer (each device against the CPU), one line per result up to ROWS_SHOWN, then what was skipped
and what failed. The HTML has the same parts in full: every row's verdict and its reason in plain
text (a saved notebook has no tooltips), the skips and failures, and "interrupted" when the run was
stopped. Duck-typed over session.RunResults: the report layer never imports the API.
"""
from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from accelbench.report.result_text import clip, row_line, spec_text

ROWS_SHOWN = 8       # result lines in the text repr
ANSWER_SHOWN = 3     # answer sentences in the text repr
SKIPS_SHOWN = 3      # skip and failure lines in the text repr, each
LISTED_HTML = 40     # skips (and failures) listed in the HTML; the rest are counted
INTERRUPTED_TEXT = "interrupted: stopped before the plan ended; what finished was kept"


def failures(skips: Sequence[Any]) -> list[Any]:
    """Skips that are failures (an error, a timeout, out of memory), not a device or dtype that cannot run."""
    return [s for s in skips if s.failed]


def not_failed(skips: Sequence[Any]) -> list[Any]:
    return [s for s in skips if not s.failed]


def counts_text(rows: Sequence[Any], skips: Sequence[Any]) -> str:
    """"3 results (2 valid, 1 invalid); 1 skipped, 1 failed"."""
    verdicts: dict[str, int] = {}
    for row in rows:
        verdicts[row.measurement.verdict] = verdicts.get(row.measurement.verdict, 0) + 1
    inner = ", ".join(f"{n} {v}" for v, n in verdicts.items())
    results = f"{len(rows)} result{'s' if len(rows) != 1 else ''}" + (f" ({inner})" if inner else "")
    return f"{results}; {len(not_failed(skips))} skipped, {len(failures(skips))} failed"


def title_text(results: Any, rows: Sequence[Any]) -> str:
    state = "INTERRUPTED" if results.interrupted else "complete"
    rigor = f", rigor {results.rigor}" if results.rigor else ""
    return f"accelbench run {results.run_id} ({state}{rigor}): {counts_text(rows, results.skips)}"


def answer_lines(answer: Any) -> list[str]:
    """The headline's sentences for devices other than the CPU baseline (none: nothing to compare)."""
    return [" ".join(d.sentences()) for d in getattr(answer, "devices", ())]


def run_text(results: Any, rows: Sequence[Any], answer: Any) -> str:
    """`repr(results)`: a few lines, the answer first; `results.to_pandas()` has every figure."""
    lines = [title_text(results, rows)]
    if results.interrupted:
        lines.append(f"  {INTERRUPTED_TEXT}")
    said = answer_lines(answer)
    lines += [f"  {clip(s)}" for s in said[:ANSWER_SHOWN]]
    if len(said) > ANSWER_SHOWN:
        lines.append(f"  … {len(said) - ANSWER_SHOWN} more devices: results.headline()")
    lines += [f"  {row_line(row)}" for row in rows[:ROWS_SHOWN]]
    if len(rows) > ROWS_SHOWN:
        lines.append(f"  … {len(rows) - ROWS_SHOWN} more results: results.to_pandas()")
    for word, items in (("failed", failures(results.skips)), ("skipped", not_failed(results.skips))):
        lines += [f"  {word}: {clip(spec_text(s.spec) + ' — ' + _reason(s.reason), 150)}" for s in items[:SKIPS_SHOWN]]
        if len(items) > SKIPS_SHOWN:
            lines.append(f"  … {len(items) - SKIPS_SHOWN} more {word}: results.skips")
    return "\n".join(lines)


def _reason(reason: str) -> str:
    return reason.split("\n", 1)[0]


def _items(skips: Sequence[Any]) -> str:
    shown = "".join(f"<li>{escape(spec_text(s.spec))}: {escape(_reason(s.reason))}</li>" for s in skips[:LISTED_HTML])
    more = f"<li>… and {len(skips) - LISTED_HTML} more (results.skips)</li>" if len(skips) > LISTED_HTML else ""
    return f"<ul>{shown}{more}</ul>"


def run_html(results: Any, rows: Sequence[Any], answer: Any) -> str:
    """`_repr_html_`: state, the answer, every row with its verdict and reason, failures, skips."""
    from accelbench.report.compare.html import results_table_html

    parts = [f"<p><b>{escape(title_text(results, rows))}</b></p>"]
    if results.interrupted:
        parts.append(f'<p style="color:#cf222e;font-weight:bold">{escape(INTERRUPTED_TEXT.capitalize())}: '
                     "the plan did not finish, so results and speed-ups may be missing.</p>")
    lines = list(answer.lines()) if answer is not None and answer.devices else []
    if lines:
        parts.append("<p><b>The answer</b></p><ul>" + "".join(f"<li>{escape(s)}</li>" for s in lines) + "</ul>")
    if rows:
        parts.append(results_table_html(rows))
    for title, items in (("Failed", failures(results.skips)), ("Skipped", not_failed(results.skips))):
        if items:
            parts.append(f"<p><b>{title}</b> ({len(items)})</p>{_items(items)}")
    return "<div>" + "".join(parts) + "</div>"
