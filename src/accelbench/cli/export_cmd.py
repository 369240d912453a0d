"""`accelbench export`: stored runs as one JSON document (for sharing, `import` and `compare`), or
as a tidy CSV table, one row per result, for R, pandas and spreadsheets (docs/r-and-pandas.md)."""
from __future__ import annotations

import io
import json
import sys

from accelbench.errors import UsageError

FORMATS = ("json", "csv")


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("runs", nargs="*", metavar="RUN",
                        help="run ids, unique id prefixes or suffixes, latest or latest~N (default: latest)")
    parser.add_argument("--all", action="store_true", help="every stored run, oldest first")
    parser.add_argument("--format", choices=FORMATS, default="json",
                        help="json: the document `accelbench import` and `compare` read, each result with its "
                             "derived figures; csv: one row per result (columns: docs/results-schema.md) "
                             "(default: json)")
    parser.add_argument("-o", "--output", metavar="FILE", type=validate.output_file("the exported runs"),
                        help="write here, replacing a file of that name (default: standard output)")
    parser.add_argument("--db", metavar="PATH", type=validate.DB, help="results database")


def _run_ids(store, args) -> list[str]:
    if args.all and args.runs:
        raise UsageError(f"--all exports every run; drop {' '.join(args.runs)!r} or drop --all")
    if args.all:
        ids = [info.id for info in reversed(store.runs())]
        if not ids:
            raise UsageError(f"no runs are stored in {store.path} yet: try `accelbench run` first")
        return ids
    return list(dict.fromkeys(store.resolve_run(ref) for ref in args.runs or ["latest"]))


def _csv_text(store, run_ids: list[str]) -> tuple[str, int]:
    from accelbench.report.data import load_run
    from accelbench.report.tidy import tidy_records, write_csv

    records = []
    for run_id in run_ids:
        run = load_run(store, run_id)
        records += tidy_records(run.rows, run_id=run_id, started_at=run.info.started_at,
                                host=run.info.hostname or None)
    buffer = io.StringIO()
    count = write_csv(records, buffer)
    return buffer.getvalue(), count


def _json_text(store, run_ids: list[str]) -> tuple[str, int]:
    from accelbench.report.derived import add_derived
    from accelbench.store.export import export_runs

    document = add_derived(export_runs(store, run_ids), store)
    return json.dumps(document, indent=1, allow_nan=False) + "\n", sum(len(r["results"]) for r in document["runs"])


def run(args) -> int:
    from accelbench.store.db import Store

    from accelbench.safe_write import check_target, database_files

    with Store(args.db, create=False) as store:
        inputs = database_files(store.path)
        if args.output:  # refused before any work: a link, a special file, the database itself
            check_target(args.output, inputs)
        run_ids = _run_ids(store, args)
        text, results = (_csv_text if args.format == "csv" else _json_text)(store, run_ids)
    if args.output:
        from accelbench.safe_write import write_text
        from accelbench.terminal import printable

        write_text(args.output, text, inputs)
        print(printable(f"exported {len(run_ids)} run(s), {results} result(s) to {args.output}"), file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
