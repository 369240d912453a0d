"""Terminal output for `accelbench compare`: the comparison table, the reference placement.

The summary line is printed last, on its own, so it is what a CI log shows at the bottom.
"""
from __future__ import annotations

from rich.console import Console, JustifyMethod
from rich.table import Table

from accelbench.report.compare.ceilings import BANDWIDTH, run_best_rates
from accelbench.report.compare.compare import Comparison, ci_text, spec_label
from accelbench.report.compare.reference import UserFigure, datasheet_shares, place_run
from accelbench.report.data import RunData
from accelbench.devices import datasheets
from accelbench.report.summary import params_text, where
from accelbench.terminal import hanging
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


def _ci_text(r) -> str:
    return "—" if r.speedup is None else ci_text(r.speedup)


def _wide_table(c: Comparison, with_notes: bool) -> Table:
    note: list[tuple[str, JustifyMethod]] = [("note", "left")] if with_notes else []
    table = _table("", [("spec", "left"), ("median A", "right"), ("median B", "right"),
                        ("B vs A [95% CI]", "right"), ("p", "right"), ("run-to-run noise", "left"), ("verdict", "left"),
                        *note])
    table.columns[6].min_width = max((len(r.verdict) for r in c.rows), default=7)  # the note column gives way
    for r in c.rows:
        table.add_row(escape(r.label), format_seconds(r.median_a_s), format_seconds(r.median_b_s), _ci_text(r),
                      "—" if r.p_value is None else f"{r.p_value:.2g}", "—" if r.noise is None else r.noise.short(),
                      _styled(r.verdict), *([escape(r.note)] if with_notes else []))
    return table


def _narrow_table(c: Comparison) -> Table:
    """Two lines a spec (where it ran over what; A over B; ratio over interval; verdict over p and
    the noise band); notes go below. The verdict has a column of its own width: never cut."""
    table = _table("", [("where\nspec", "left"), ("median A\nmedian B", "right"), ("B vs A\n[95% CI]", "right"),
                        ("verdict\np · noise band", "left")])
    table.columns[0].min_width = max((len(where(r.spec)) for r in c.rows), default=5)
    table.columns[-1].min_width = max((len(r.verdict) for r in c.rows), default=7)  # "inconclusive" whole
    for r in c.rows:
        point, _, bracket = _ci_text(r).partition(" [")
        ratio = point if not bracket else f"{point}\n{escape('[' + bracket)}"
        noise = "—" if r.noise is None else r.noise.short()
        what = " ".join(p for p in (r.spec.workload, params_text(r.spec)) if p)
        p_value = "p —" if r.p_value is None else f"p {r.p_value:.2g}"
        table.add_row(f"{escape(where(r.spec))}\n[dim]{escape(what)}[/]",
                      f"{format_seconds(r.median_a_s)}\n{format_seconds(r.median_b_s)}", ratio,
                      f"{_styled(r.verdict)}\n[dim]{p_value} · {escape(noise)}[/]")
    return table


def render_comparison(c: Comparison, console: Console) -> None:
    console.print(f"[bold]A[/] (baseline)  {escape(c.a.label)} from {escape(c.a.source)}")
    console.print(f"[bold]B[/] (candidate) {escape(c.b.label)} from {escape(c.b.source)}")
    console.print(("" if c.same_machine else "[bold yellow]") + escape(c.scope) + ("" if c.same_machine else "[/]"))
    notes_width = 30 if any(r.note for r in c.rows) else 0  # the note column wraps; it needs this much
    wide = _wide_table(c, with_notes=False)
    fits = console.measure(wide, options=console.options.update_width(10_000)).maximum + notes_width <= console.width
    console.print(_wide_table(c, with_notes=True) if fits else _narrow_table(c))
    if not fits and any(r.note for r in c.rows):
        console.print("[bold]Notes[/]:")
        for r in c.rows:
            if r.note:
                console.print(hanging("•", f"{escape(r.label)}: {escape(r.note)}"))
    console.print(f"[dim]B vs A: how much slower or faster B is (time in A / time in B), bootstrap 95% interval of the ratio of "
                  f"medians; same: interval within ±{c.same_within:.0%} of 1; faster/slower: beyond ±{c.same_within:.0%}, "
                  f"Mann–Whitney p < {c.alpha:g} and the interval outside the spec's run-to-run noise band "
                  f"(what identical runs on this machine show); only results whose check passed count.[/]")
    console.print(f"Run-to-run noise: {escape(c.noise_text())}")
    console.print(("Machine reference: " if c.machine is not None else "[yellow]No machine reference:[/] ")
                  + escape(c.machine_text()))
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
        console.print(hanging("•", escape(d.text())))


# -- --reference ----------------------------------------------------------------------------------

def _placement_table(placement, sources: list[str] | None = None) -> Table:
    """One published benchmark with the user's figures placed in it. Given `sources` (a narrow
    terminal), device and software share a column and each source is a numbered note collected there."""
    b = placement.benchmark
    narrow = sources is not None
    columns: list[tuple[str, JustifyMethod]] = [("", "left"), ("device\nsoftware / spec", "left")] if narrow else \
        [("", "left"), ("device", "left"), ("software / spec", "left")]
    table = _table(f"[bold]{escape(b.title)}[/] ({escape(b.unit)})",
                   columns + [("time", "right"), ("vs yours", "right"), ("source", "left")])
    mine = [u.value_s for u in placement.user]
    for value_s, who, item in placement.ordered():
        if isinstance(item, UserFigure):
            mark, device, software, versus, source = ("[bold]yours[/]", item.device_name,
                                                      spec_label(item.measurement.spec), "", item.how)
        else:
            versus = " / ".join(_versus(mine_s, value_s) for mine_s in mine) if mine else "—"
            mark, device, software, source = "seed", item.device, item.software, item.citation()
        if sources is not None:
            sources.append(source)
            table.add_row(mark, f"{escape(device)}\n[dim]{escape(software)}[/]", format_seconds(value_s),
                          versus, f"\\[{len(sources)}]")
        else:
            table.add_row(mark, escape(device), escape(software), format_seconds(value_s), versus, escape(source))
    return table


def _print_placement(placement, console: Console) -> None:
    wide = _placement_table(placement)
    if console.measure(wide, options=console.options.update_width(10_000)).maximum <= console.width:
        console.print(wide)
        return
    sources: list[str] = []
    console.print(_placement_table(placement, sources))
    for number, source in enumerate(sources, 1):
        console.print(hanging(f"[dim]\\[{number}][/]", f"[dim]{escape(source)}[/]"))


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
        _print_placement(placement, console)
        if not placement.user:
            console.print(f"  [dim]no result of workload {placement.benchmark.maps_from['workload']!r} "
                          "with these parameters in this run[/]")
        for reason in placement.not_placed:
            console.print(f"  [dim]{escape(reason)}[/]")
        for figure in placement.user:
            console.print(f"  Differences that matter for {escape(spec_label(figure.measurement.spec))}:")
            for text in figure.differences:
                console.print(hanging("   -", escape(text)))
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
