"""`accelbench runs`: the runs stored in the database, newest first."""
from __future__ import annotations

import json
import sys


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("--limit", type=validate.whole_number(1, validate.MAX_COUNT), default=20,
                        help="how many, newest first (default 20)")
    parser.add_argument("--db", metavar="PATH", type=validate.DB, help="results database")
    parser.add_argument("--json", action="store_true", help="print as JSON")


def run(args) -> int:
    from dataclasses import asdict

    from accelbench.store.db import NoDatabaseError, Store

    try:
        with Store(args.db, create=False) as store:
            runs = store.runs(limit=args.limit)
            path = store.path
    except NoDatabaseError as exc:  # nothing stored yet: say so, and create nothing
        print(f"accelbench runs: {exc}", file=sys.stderr)
        if args.json:
            print("[]")
        return 0
    if args.json:
        json.dump([asdict(r) for r in runs], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from rich.table import Table

    from accelbench.terminal import console, literal

    table = Table(title=f"[bold]Runs[/] in {literal(path)}", title_justify="left", show_edge=False, pad_edge=False)
    for column in ("run", "started (UTC)", "status", "host", "results", "skips", "tags"):
        table.add_column(column, no_wrap=column in ("run", "started (UTC)"))
    for r in runs:
        table.add_row(literal(r.id), literal(r.started_at[:19]), literal(r.status), literal(r.hostname),
                      str(r.result_count), str(r.skip_count),
                      literal(", ".join(f"{k}={v}" for k, v in r.tags.items())))
    console().print(table if runs else f"no runs stored in {literal(path)} yet: try `accelbench run`")
    return 0
