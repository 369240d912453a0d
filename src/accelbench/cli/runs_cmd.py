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
    from accelbench.terminal import console, literal

    out = console()
    if not runs:
        out.print(f"no runs stored in {literal(path)} yet: try `accelbench run`")
        return 0
    wide = _wide_table(runs, path)
    fits = out.measure(wide, options=out.options.update_width(10_000)).maximum <= out.width
    out.print(wide if fits else _narrow_table(runs, path))
    return 0


def _cells(r) -> dict[str, str]:
    from accelbench.terminal import literal

    return {"run": literal(r.id), "started": literal(r.started_at[:19].replace("T", " ")), "status": literal(r.status),
            "host": literal(r.hostname), "workloads": literal(", ".join(r.workloads) or "—"),
            "tags": literal(", ".join(f"{k}={v}" for k, v in r.tags.items()))}


def _table(path, columns: list[tuple[str, bool]]):
    """A table whose no_wrap columns (ids, times, statuses) are never cut or wrapped."""
    from rich.table import Table

    from accelbench.terminal import literal

    table = Table(title=f"[bold]Runs[/] in {literal(path)}", title_justify="left", show_edge=False, pad_edge=False)
    for header, whole in columns:
        table.add_column(header, no_wrap=whole, min_width=max(map(len, header.split("\n"))) if whole else None,
                         justify="right" if header.startswith(("results", "skips")) else "left",
                         overflow="fold")  # a long tag or host wraps whole; only a word wider than the column folds
    return table


def _wide_table(runs, path):
    table = _table(path, [("run", True), ("started (UTC)", True), ("status", True), ("host", False),
                          ("workloads", False), ("results", True), ("skips", True), ("tags", False)])
    for r in runs:
        c = _cells(r)
        table.add_row(c["run"], c["started"], c["status"], c["host"], c["workloads"],
                      str(r.result_count), str(r.skip_count), c["tags"])
    return table


def _narrow_table(runs, path):
    """Two lines a run: id over start time, status over host, results over skips."""
    table = _table(path, [("run\nstarted (UTC)", True), ("status\nhost", False), ("workloads", False),
                          ("results\nskipped", True), ("tags", False)])
    table.columns[1].min_width = max(len(r.status) for r in runs)  # "interrupted" stays whole
    for r in runs:
        c = _cells(r)
        table.add_row(f"{c['run']}\n[dim]{c['started'][:16]}[/]", f"{c['status']}\n[dim]{c['host']}[/]",
                      c["workloads"], f"{r.result_count}\n{r.skip_count}", c["tags"].replace(", ", "\n"))
    return table
