"""What `accelbench run` prints by default: one screen (≤ 40 lines at 80 columns).

The answer in words (each device against the CPU, verdicts only), one table of the speed-ups the
answer rests on (against all CPU cores and one core, each with its interval), the CPU side's figures,
the busy line and the results that are not plainly valid, then where every other figure is
(`accelbench show`, `accelbench report`, `--json`). Every figure here is read from the same
SpeedupCI the answer, the report and --json read (report/headline.py): one derivation.
"""
from __future__ import annotations

from typing import Any

from accelbench.report import ratio_text
from accelbench.report.headline import DeviceVerdict, Headline, WorkComparison

SCREEN_LINES = 40
WORDS = {"faster": "faster than", "slower": "slower than", "same": "as fast as",
         "inconclusive": "no clear difference from"}


def against(ratio: Any, whom: str) -> str:
    """'slower than all CPU cores', 'no clear difference from one core', 'not measurable against …'."""
    kind = ratio_text.said(ratio).kind
    if kind in (ratio_text.UNDECIDED_LOAD, ratio_text.UNDECIDED_CONTAMINATED):
        return f"not decided against {whom}"
    if kind == ratio_text.UNMEASURABLE:
        return f"not measurable against {whom}"
    return f"{WORDS.get(ratio.verdict(), 'no clear difference from')} {whom}"


def comparison_words(c: WorkComparison) -> str:
    parts = [against(r, whom) for r, whom in ((c.vs_all_cores, "all CPU cores"), (c.vs_one_core, "one core")) if r]
    return f"{c.kind} work: {', '.join(parts)}" if parts else f"{c.kind} work: not compared"


def device_words(d: DeviceVerdict) -> str:
    """One device's answer in words; its figures are in the table below it."""
    said = "; ".join(comparison_words(c) for c in d.comparisons) or (
        "no speed-up against the CPU could be measured" + (f": {d.why_not_compared}" if d.why_not_compared else ""))
    tail = f" {d.break_even[0].upper()}{d.break_even[1:]}." if d.break_even else ""
    return f"{d.series} ({d.description}): {said}.{tail} {d.confidence[0].upper()}{d.confidence[1:]}."


def render_run(answer: Headline, skips: list, console: Any, *, run_id: str, db_path: str, results: list,
               also: str = "") -> None:
    """A finished run's screen: the answer, its speed-ups, the caveats, what was left out or refused,
    where the rest is (`also`: what the default suite leaves to named runs)."""
    left_out = " ".join(part for part in (left_out_line(skips), refused_line(results)) if part)
    # the devices found and not measured were named before the first measurement (cli/run_cmd.py)
    render_screen(answer, console, left_out=left_out, unreached=False,
                  run_line=f"Run {run_id}: {len(results)} results saved in {db_path}. Every figure: accelbench show "
                           f"{run_id}; charts: accelbench report." + (f" {also}" if also else ""))


def left_out_line(skips: list) -> str:
    """One line for what did not run: combinations that cannot, and (apart) what failed."""
    from collections import Counter

    cannot = Counter(s.reason.splitlines()[0].split(":")[0] for s in skips if not s.failed)
    failed = [s for s in skips if s.failed]
    parts = []
    if cannot:
        common = "; ".join(f"{reason} ({count})" for reason, count in cannot.most_common(2))
        rest = cannot.most_common()[2:]
        others = "another reason" if len(rest) == 1 else f"{len(rest)} other reasons"
        more = f"; {sum(count for _, count in rest)} for {others}" if rest else ""
        parts.append(f"Left out {sum(cannot.values())} that cannot run here: {common}{more}.")
    if failed:
        parts.append(f"{len(failed)} failed: {failed[0].spec.label()}: {failed[0].reason.splitlines()[0]}"
                     + (f" and {len(failed) - 1} more" if len(failed) > 1 else "") + ".")
    return " ".join(parts)


def refused_line(results: list) -> str:
    """The results measured and refused (a wrong output, an impossible rate): the first one's reason."""
    refused = [m for m in results if m.verdict == "invalid"]
    if not refused:
        return ""
    first = refused[0]
    why = str(first.verdict_reasons[0]) if first.verdict_reasons else first.check.detail
    more = f" and {len(refused) - 1} more" if len(refused) > 1 else ""
    return f"{len(refused)} invalid, time not counted: {first.spec.label()}: {why.splitlines()[0]}{more}."


def render_screen(answer: Headline, console: Any, *, run_line: str, left_out: str = "", unreached: bool = True) -> None:
    """The answer, the speed-up table, the caveats and where the details are."""
    from rich.table import Table

    from accelbench.terminal import literal

    console.print("[bold]The answer[/] (each device against this machine's CPU; figures below):")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=1, no_wrap=True)
    grid.add_column(overflow="fold")
    for device in answer.devices:
        grid.add_row("•", literal(device_words(device)))
    if not answer.devices:
        grid.add_row("•", answer.no_device_text)
    for text in answer.unreached if unreached else ():
        grid.add_row("[yellow]![/]", literal(text))
    console.print(grid)
    table = speedup_table(answer)
    if table is not None:
        console.print(table)
    notes = Table.grid(padding=(0, 1))
    notes.add_column(width=1, no_wrap=True)
    notes.add_column(overflow="fold")
    if answer.cpu:
        notes.add_row("•", literal(answer.cpu))
    for text in answer.caveats:
        notes.add_row("[yellow]![/]", literal(text))
    if left_out:
        notes.add_row("•", literal(left_out))
    notes.add_row("•", literal(run_line))
    console.print(notes)


def speedup_table(answer: Headline):
    """Series, work, and its speed-up against all CPU cores and one core: two lines a row."""
    from rich.table import Table

    from accelbench.terminal import literal

    rows = [(d, c) for d in answer.devices for c in d.comparisons]
    if not rows:
        return None
    table = Table(title="Speed-ups (CPU time / device time, 95% interval)", title_justify="left",
                  show_edge=False, pad_edge=False, box=None, show_header=True, header_style="bold")
    table.add_column("device", overflow="fold", max_width=22)
    table.add_column("work", overflow="fold", max_width=20)
    table.add_column("vs all CPU cores", overflow="fold", max_width=18)
    table.add_column("vs one core", overflow="fold", max_width=18)
    previous = None
    for device, c in rows:
        table.add_row(literal(device.series if device.series != previous else ""), literal(c.what),
                      _cell(c.vs_all_cores), _cell(c.vs_one_core))
        previous = device.series
    return table


def _cell(ratio: Any) -> str:
    from rich.markup import escape

    if ratio is None:
        return "—"
    head, detail = ratio_text.cell(ratio)
    colour = {"faster": "green", "slower": "red"}.get(ratio_text.oriented(ratio).word, "")
    shown = f"[{colour}]{escape(head)}[/]" if colour and ratio_text.measurable(ratio) else escape(head)
    basis = f" {ratio.pairs}p" if getattr(ratio, "paired", False) else " †"
    return f"{shown}\n{escape(detail)}{basis if ratio_text.cell_is_figure(ratio) else ''}"
