"""`accelbench project RUN --to h100`: a roofline what-if of a run's workloads on another device.

The output is a PROJECTION, labelled so and printed with its assumptions: nothing was measured on
the target. An unknown target exits 2 listing the accepted names.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import JustifyMethod


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("run", nargs="?", default="latest", metavar="RUN",
                        help="run id, unique prefix, latest, latest~N, or an exported FILE.json[#RUN] "
                             "(default: latest)")
    parser.add_argument("--to", required=True, metavar="DEVICE",
                        help="target device from the datasheet table: h100, h200, a100, v100, k40, "
                             "rtx-4090, mi300x, ... (a wrong name lists them all)")
    parser.add_argument("--json", action="store_true", help="print the projection as JSON")
    parser.add_argument("--db", metavar="PATH", type=validate.DB, help="results database (default: $ACCELBENCH_DB or the user data dir)")


def run(args) -> int:
    from accelbench.cli.compare_cmd import load_ref, print_json
    from accelbench.report.compare.project import project_run, resolve_target

    target = resolve_target(args.to)  # before reading anything: a typo fails fast
    report = project_run(load_ref(args.run, args.db), target)
    if args.json:
        print_json(report.to_dict())
    else:
        _render(report)
    return 0


def _ceiling_text(ceiling) -> str:
    from accelbench.units import format_si

    if ceiling is None:
        return "—"
    unit = "B/s" if ceiling.metric == "memory_bandwidth" else "FLOP/s"
    return f"{format_si(ceiling.value, unit)} {ceiling.metric} ({ceiling.provenance})"


def _render(report) -> None:
    from accelbench.report.compare.compare import spec_label
    from accelbench.terminal import console as make_console
    from accelbench.terminal import hanging, literal

    console = make_console()
    target = report.target
    console.print(f"[bold reverse] PROJECTION [/] of run {literal(report.run.label)} onto "
                  f"[bold]{literal(target.name)}[/] — estimated from datasheet ceilings, not measured "
                  f"({literal(target.source)})")
    console.print("Assumptions:")
    for assumption in report.assumptions:
        console.print(hanging("•", literal(assumption)))
    unbounded = console.options.update_width(10_000)
    # the assumption column wraps: the wide table fits when the rest does with room left for it
    if not report.projections:  # headers over no row say nothing: the reasons below say why
        console.print(f"Nothing of run {literal(report.run.run_id)} could be projected.")
    elif console.measure(_table(report, None, assumes=False), options=unbounded).maximum + 40 <= console.width:
        console.print(_table(report, None))
    else:  # narrow: two lines a row, each row's assumption a numbered note under the table
        notes: list[str] = []
        console.print(_table(report, notes))
        for number, note in enumerate(notes, 1):
            console.print(hanging(f"\\[{number}]", literal(note)))
    small = [p for p in report.projections if p.lower_bound]
    if small:
        console.print(hanging("[yellow]![/]", f"{len(small)} of {len(report.projections)} projections fall under one "
                              "kernel launch: the problem is too small for the roofline to say more than a lower "
                              "bound (≥: at least this long; ≤: at most this speed-up)"))
    if report.not_projected:
        console.print(f"[bold]Not projected[/] ({len(report.not_projected)}):")
        for spec, reason in report.not_projected:
            console.print(hanging("•", f"{literal(spec_label(spec))}: {literal(reason)}"))


def _table(report, notes: list[str] | None, assumes: bool = True):
    from rich.table import Table

    from accelbench.report.compare.compare import spec_label
    from accelbench.report.summary import params_text, where
    from accelbench.terminal import literal
    from accelbench.units import format_seconds

    narrow = notes is not None
    wide: tuple[tuple[str, JustifyMethod], ...] = (
        ("spec", "left"), ("measured here", "right"), ("bound here", "left"), ("efficiency here", "right"),
        ("projected", "right"), ("bound there", "left"), ("× projected", "right"), ("assumes", "left"))
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        (("where\nspec", "left"), ("measured\nbound here", "right"), ("efficiency\nhere", "right"),
         ("projected\nbound there", "right"), ("× projected\n\\[assumes]", "right")) if narrow else
        wide[:8 if assumes else 7])
    table = Table(show_edge=False, pad_edge=False)
    for header, justify in columns:
        table.add_column(header, justify=justify, overflow="fold")
    if narrow:
        table.columns[0].min_width = max((len(where(p.spec)) for p in report.projections), default=5)
    for p in report.projections:
        here = _ceiling_text(p.source_flops if p.source_bound == "compute" else p.source_bandwidth)
        there = _ceiling_text(p.target_flops if p.target_bound == "compute" else p.target_bandwidth)
        efficiency = f"{p.efficiency:.0%}" + (" (capped)" if p.capped else "")
        assumption = p.assumption if p.lower_bound else f"{p.assumption}: {here} → {there}"
        projected = ("≥ " if p.lower_bound else "") + format_seconds(p.projected_s)
        speedup = ("≤ " if p.lower_bound else "") + f"{p.speedup:.1f}×"
        if notes is not None:
            notes.append(assumption)
            what = " ".join(part for part in (p.spec.workload, params_text(p.spec)) if part)
            table.add_row(f"{literal(where(p.spec))}\n[dim]{literal(what)}[/]",
                          f"{format_seconds(p.measured_s)}\n{p.source_bound}", efficiency,
                          f"{projected}\n{p.target_bound}", f"{speedup}\n\\[{len(notes)}]")
        else:
            table.add_row(literal(spec_label(p.spec)), format_seconds(p.measured_s), p.source_bound, efficiency,
                          projected, p.target_bound, speedup,
                          *[literal(assumption)] * assumes)
    return table
