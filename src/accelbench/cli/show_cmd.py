"""`accelbench show [RUN]`: every figure of a stored run in the terminal: the answer, a table per
workload, the skips, the findings (what `accelbench run --details` prints as it ends)."""
from __future__ import annotations

import sys


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("run", nargs="?", default="latest",
                        help="a run id, a unique prefix, latest or latest~N (default: latest)")
    parser.add_argument("--db", metavar="PATH", type=validate.DB, help="results database")


def run(args) -> int:
    from accelbench.report.data import load_run
    from accelbench.store.db import NoDatabaseError, Store

    try:
        with Store(args.db, create=False) as store:
            data = load_run(store, store.resolve_run(args.run))
    except NoDatabaseError as exc:
        print(f"accelbench show: {exc}", file=sys.stderr)
        return 1
    print_details(data.rows, data.skips, data.devices, data.machine, rigor=data.selection.get("rigor"),
                  run_line=f"Run {data.run_id} ({data.status}, {data.started_at[:19].replace('T', ' ')}): "
                           f"{len(data.measurements)} results, {len(data.skips)} skipped, in {data.source}")
    return 0


def print_details(rows, skips, devices, machine, *, rigor, run_line: str) -> None:
    """The answer in full sentences, a table per workload, the skips and the findings."""
    from accelbench.report.advice import findings
    from accelbench.report.findings import Findings, render_findings
    from accelbench.report.headline import headline_for_run, render_headline
    from accelbench.report.summary import render_summary
    from accelbench.terminal import console as make_console
    from accelbench.terminal import literal

    console = make_console()
    render_headline(headline_for_run(rows, devices, machine, rigor=rigor), console)
    render_summary(rows, skips, console)
    render_findings(Findings(findings(rows, devices, machine, rigor=rigor)), console)
    console.print()
    console.print(literal(run_line))
