"""`accelbench export`: stored runs as one JSON document, for sharing or for collecting cluster jobs."""
from __future__ import annotations

import json
import sys


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("runs", nargs="*", default=["latest"], metavar="RUN",
                        help="run ids, unique id prefixes, latest or latest~N (default: latest)")
    parser.add_argument("-o", "--output", metavar="FILE", type=validate.output_file("the JSON document"),
                        help="write here, replacing a file of that name (default: standard output)")
    parser.add_argument("--db", metavar="PATH", type=validate.DB, help="results database")


def run(args) -> int:
    from accelbench.store.db import Store
    from accelbench.store.export import export_runs, write_json

    with Store(args.db, create=False) as store:
        run_ids = [store.resolve_run(ref) for ref in args.runs]
        document = export_runs(store, run_ids)
    if args.output:
        write_json(args.output, document)
        from accelbench.terminal import printable

        print(printable(f"exported {len(run_ids)} run(s) to {args.output}"), file=sys.stderr)
    else:
        json.dump(document, sys.stdout, indent=1, allow_nan=False)
        sys.stdout.write("\n")
    return 0
