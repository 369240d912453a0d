"""Terminal output for `accelbench compare`: the comparison table, the reference placement.

The summary line is printed last, on its own, so it is what a CI log shows at the bottom.
"""
from __future__ import annotations

from rich.console import Console, JustifyMethod
from rich.table import Table

from accelbench.report.compare.ceilings import BANDWIDTH, run_best_rates
from accelbench.report.compare.compare import Comparison, spec_label
from accelbench.report.compare.reference import UserFigure, datasheet_shares, place_run
from accelbench.report.data import RunData
from accelbench.devices import datasheets
from accelbench.terminal import literal as escape
from accelbench.units import format_seconds, format_si

_STYLE = {"faster": "green", "slower": "red", "inconclusive": "yellow", "excluded": "dim"}


def _styled(verdict: str) -> str:
    style = _STYLE.get(verdict)
    return f"[{style}]{verdict}[/]" if style else verdict


def _table(title: str, columns: list[tuple[str, JustifyMethod]]) -> Table:
    table = Table(title=title, title_justify="left", show_edge=False, pad_edge=False)
    for header, justify in columns:
        table.add_column(header, justify=justify, overflow="fold")
    return table


def render_comparison(c: Comparison, console: Console) -> None:
    console.print(f"[bold]A[/] (baseline)  {escape(c.a.label)} from {escape(c.a.source)}")
    console.print(f"[bold]B[/] (candidate) {escape(c.b.label)} from {escape(c.b.source)}")
    console.print(("" if c.same_machine else "[bold yellow]") + escape(c.scope) + ("" if c.same_machine else "[/]"))
    table = _table("", [("spec", "left"), ("median A", "right"), ("median B", "right"),
                        ("speed-up A/B [95% CI]", "right"), ("p", "right"), ("run-to-run noise", "left"), ("verdict", "left"),
                        ("note", "left")])
    for r in c.rows:
        ci = r.speedup
        table.add_row(escape(r.label), format_seconds(r.median_a_s), format_seconds(r.median_b_s),
                      "—" if ci is None else f"{ci.ratio:.3f}× [{ci.low:.3f}–{ci.high:.3f}]",
                      "—" if r.p_value is None else f"{r.p_value:.2g}", "—" if r.noise is None else r.noise.short(),
                      _styled(r.verdict), escape(r.note))
    console.print(table)
    console.print(f"[dim]speed-up = time in A / time in B (> 1: B faster), bootstrap 95% interval of the ratio of "
                  f"medians; same: interval within ±{c.same_within:.0%} of 1; faster/slower: beyond ±{c.same_within:.0%}, "
                  f"Mann–Whitney p < {c.alpha:g} and the interval outside the spec's run-to-run noise band "
                  f"(what identical runs on this machine show); only results whose check passed count.[/]")
    console.print(f"Run-to-run noise: {escape(c.noise_text())}")
    _render_differences(c, console)
    for title, specs in (("Only in A", c.only_a), ("Only in B", c.only_b)):
        if specs:
            console.print(f"[bold]{title}[/] ({len(specs)}): " + escape(", ".join(spec_label(s) for s in specs)))
    console.print()
    console.print(f"[bold]Summary:[/] {escape(c.summary_line())}")


def _render_differences(c: Comparison, console: Console) -> None:
    if not c.differences:
        console.print("Recorded machine, software and settings: no differences.")
        return
    console.print(f"[bold yellow]The runs differ in {len(c.differences)} recorded setting(s)[/] "
                  "(they can explain a change):")
    for d in c.differences:
        console.print(f"  {escape(d.text())}")


# -- --reference ----------------------------------------------------------------------------------

def _placement_table(placement) -> Table:
    b = placement.benchmark
    table = _table(f"[bold]{escape(b.title)}[/] ({escape(b.unit)})",
                   [("", "left"), ("device", "left"), ("software / spec", "left"), ("time", "right"),
                    ("vs yours", "right"), ("source", "left")])
    mine = [u.value_s for u in placement.user]
    for value_s, who, item in placement.ordered():
        if isinstance(item, UserFigure):
            table.add_row("[bold]yours[/]", escape(item.device_name), escape(spec_label(item.measurement.spec)),
                          format_seconds(value_s), "", escape(item.how))
        else:
            versus = " / ".join(_versus(mine_s, value_s) for mine_s in mine) if mine else "—"
            table.add_row("seed", escape(item.device), escape(item.software), format_seconds(value_s),
                          versus, escape(item.citation()))
    return table


def _versus(mine_s: float, theirs_s: float) -> str:
    """How the user's time compares with a published one: "you 1.4× slower"."""
    if mine_s <= 0 or theirs_s <= 0:
        return "—"
    ratio = theirs_s / mine_s
    return f"you {ratio:.2f}× faster" if ratio >= 1 else f"you {1 / ratio:.2f}× slower"


def render_reference(run: RunData, console: Console) -> None:
    console.print(f"Run [bold]{escape(run.label)}[/] from {escape(run.source)} among published figures "
                  "(other machines and software stacks: context, not a controlled comparison)")
    for placement in place_run(run):
        console.print()
        console.print(_placement_table(placement))
        if not placement.user:
            console.print(f"  [dim]no result of workload {placement.benchmark.maps_from['workload']!r} "
                          "with these parameters in this run[/]")
        for reason in placement.not_placed:
            console.print(f"  [dim]{escape(reason)}[/]")
    _render_datasheet_shares(run, console)


def _share_text(share) -> str:
    if share is None:
        return "—"
    unit = "B/s" if share.metric == BANDWIDTH else "FLOP/s"
    return f"{share.share:.2%} of {format_si(share.peak, unit)} {share.metric}"


def _render_datasheet_shares(run: RunData, console: Console) -> None:
    rates = run_best_rates(run)
    console.print()
    if not rates:
        console.print("No verified matmul or stream result in this run: nothing to set against datasheet peaks.")
        return
    rate_columns: list[tuple[str, JustifyMethod]] = [
        (f"{escape(r.what)} on {escape(r.device)}\n{format_si(r.rate, r.unit)}", "right") for r in rates]
    table = _table("[bold]Your best rates as a share of datasheet peaks[/] (per device)",
                   [("datasheet device", "left"), *rate_columns])
    shares = [{s.row.key: s for s in datasheet_shares(r)} for r in rates]
    for row in datasheets.rows():
        cells = [_share_text(by_key.get(row.key)) for by_key in shares]
        table.add_row(escape(row.name), *cells)
    console.print(table)
    console.print("[dim]Peaks from each vendor's datasheet (accelbench/data/datasheets.json lists the document); "
                  "matrix units for fp64/fp16/bf16 matmul where the datasheet gives them, fp32 without TF32.[/]")
