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
    from rich.table import Table

    from accelbench.report.compare.compare import spec_label
    from accelbench.terminal import console as make_console
    from accelbench.terminal import literal
    from accelbench.units import format_seconds

    console = make_console()
    target = report.target
    console.print(f"[bold reverse] PROJECTION [/] of run {literal(report.run.label)} onto "
                  f"[bold]{literal(target.name)}[/] — estimated from datasheet ceilings, not measured "
                  f"({literal(target.source)})")
    console.print("Assumptions:")
    for assumption in report.assumptions:
        console.print(f"  • {literal(assumption)}")
    table = Table(show_edge=False, pad_edge=False)
    columns: tuple[tuple[str, JustifyMethod], ...] = (
        ("spec", "left"), ("measured here", "right"), ("bound here", "left"), ("efficiency here", "right"),
        ("projected", "right"), ("bound there", "left"), ("× projected", "right"), ("assumes", "left"))
    for header, justify in columns:
        table.add_column(header, justify=justify, overflow="fold")
    for p in report.projections:
        here = _ceiling_text(p.source_flops if p.source_bound == "compute" else p.source_bandwidth)
        there = _ceiling_text(p.target_flops if p.target_bound == "compute" else p.target_bandwidth)
        table.add_row(literal(spec_label(p.spec)), format_seconds(p.measured_s), p.source_bound,
                      f"{p.efficiency:.0%}" + (" (capped)" if p.capped else ""), format_seconds(p.projected_s),
                      p.target_bound, f"{p.speedup:.1f}×", literal(f"{p.assumption}: {here} → {there}"))
    console.print(table)
    if report.not_projected:
        console.print(f"[bold]Not projected[/] ({len(report.not_projected)}):")
        for spec, reason in report.not_projected:
            console.print(f"  {literal(spec_label(spec))}: {literal(reason)}")
