"""Several runs' results in one table, as torch.utils.benchmark.Compare shows its measurements.

One line per function and its parameters (the dtype), one column per series (backend@device, CPU
threads); a cell is the median time with its 95% interval, the verdict beside it when it is not
valid. An invalid result shows no time (it counts nowhere), a failed one says "failed".
Duck-typed over report/analysis.py's Row and results.Skip.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import Any

from accelbench.report.result_text import threads_text, time_text

LEGEND = ("median time ± half-width of its 95% interval; (noisy), (unverified): shown, not a ceiling; "
          "invalid: wrong or impossible, no time; failed: raised or timed out (see each run's skips)")


def _line(spec) -> str:
    params = " ".join(f"{k}={v}" for k, v in spec.params if k != "threads")
    return f"{spec.workload} {params}".strip()


def _column(spec) -> str:
    return f"{spec.backend}@{spec.device}{threads_text(spec.param('threads'))}"


def _cell(row) -> str:
    m = row.measurement
    if not m.valid:
        return m.verdict
    time = time_text(row.summary)
    return time if m.verdict == "valid" else f"{time} ({m.verdict})"


def cells(rows: Iterable[Any], skips: Iterable[Any] = ()) -> tuple[list[str], list[str], dict[tuple[str, str], str]]:
    """(lines, columns, {(line, column): cell}), in the order first seen; a later result for the
    same cell (the same function benchmarked again) replaces the earlier one."""
    lines: dict[str, None] = {}
    columns: dict[str, None] = {}
    table: dict[tuple[str, str], str] = {}
    for skip in skips:
        if skip.failed:
            key = (_line(skip.spec), _column(skip.spec))
            lines.setdefault(key[0])
            columns.setdefault(key[1])
            table[key] = "failed"
    for row in rows:
        key = (_line(row.spec), _column(row.spec))
        lines.setdefault(key[0])
        columns.setdefault(key[1])
        table[key] = _cell(row)
    return list(lines), list(columns), table


def table_text(rows: Sequence[Any], skips: Sequence[Any] = ()) -> str:
    lines, columns, table = cells(rows, skips)
    if not lines:
        return "(no results)"
    grid = [["", *columns]] + [[line, *(table.get((line, c), "—") for c in columns)] for line in lines]
    widths = [max(len(r[i]) for r in grid) for i in range(len(grid[0]))]
    text = ["  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths))).rstrip()
            for r in grid]
    return "\n".join([*text, "", LEGEND])


def table_html(rows: Sequence[Any], skips: Sequence[Any] = ()) -> str:
    lines, columns, table = cells(rows, skips)
    cell = "padding:2px 8px;border-bottom:1px solid #ddd;"
    head = "".join(f'<th style="{cell}text-align:right">{escape(c)}</th>' for c in columns)
    body = "".join(
        f'<tr><td style="{cell}">{escape(line)}</td>'
        + "".join(f'<td style="{cell}text-align:right;white-space:nowrap">{escape(table.get((line, c), "—"))}</td>'
                  for c in columns) + "</tr>" for line in lines)
    return (f'<div><table style="border-collapse:collapse"><thead><tr><th style="{cell}"></th>{head}</tr></thead>'
            f'<tbody>{body}</tbody></table><p style="color:#57606a">{escape(LEGEND)}</p></div>')
