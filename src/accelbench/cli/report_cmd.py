"""`accelbench report [RUN...]`: one self-contained HTML file with figures, findings and tables."""
from __future__ import annotations

import importlib.util
import sys

from accelbench.errors import UsageError

DEFAULT_OUTPUT = "accelbench-report"


def add_arguments(parser) -> None:
    parser.add_argument("runs", nargs="*", default=["latest"], metavar="RUN",
                        help="run ids, unique id prefixes, latest or latest~N (default: latest)")
    parser.add_argument("-o", "--output", metavar="DIR", default=DEFAULT_OUTPUT,
                        help=f"folder for report.html and the PNG figures (default: ./{DEFAULT_OUTPUT}/)")
    parser.add_argument("--db", metavar="PATH", help="results database")


def has_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def _require_matplotlib() -> None:
    # checked before any work, so a missing extra is one clear line, not a traceback mid-report
    if not has_matplotlib():
        raise UsageError("the report draws its figures with matplotlib, which is not installed: "
                         "pip install accelbench[plot]")


def run(args) -> int:
    from accelbench.report.build import build_report
    from accelbench.store.db import Store

    _require_matplotlib()
    with Store(args.db) as store:
        if not store.runs(limit=1):
            raise UsageError(f"no runs are stored in {store.path} yet: try `accelbench run` first")
        files = build_report(store, list(args.runs), args.output)
    from accelbench.terminal import printable

    print(printable(f"report for run(s) {', '.join(files.run_ids)}: {files.html_path}"))
    for path in files.png_paths:
        print(printable(f"  figure: {path}"))
    for note in files.missing:
        print(printable(f"  not drawn: {note}"), file=sys.stderr)
    return 0
