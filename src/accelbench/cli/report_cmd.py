"""`accelbench report [RUN...]`: one self-contained HTML file with figures, findings and tables."""
from __future__ import annotations

import importlib.util
import sys

from accelbench.errors import UsageError

DEFAULT_OUTPUT = "accelbench-report"


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("runs", nargs="*", default=["latest"], metavar="RUN",
                        help="run ids, unique id prefixes, latest or latest~N (default: latest)")
    parser.add_argument("-o", "--output", metavar="DIR", default=DEFAULT_OUTPUT,
                        type=validate.folder("report.html and the PNG figures"),
                        help=f"folder for report.html and the PNG figures, new or existing (files of "
                             f"those names are replaced; default: ./{DEFAULT_OUTPUT}/)")
    parser.add_argument("--db", metavar="PATH", type=validate.DB, help="results database")


def has_matplotlib() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def _require_matplotlib() -> None:
    # checked before any work, so a missing extra is one clear line, not a traceback mid-report
    if not has_matplotlib():
        raise UsageError("the report draws its figures with matplotlib, which is not installed: "
                         "pip install accelbench[plot]")


def run(args) -> int:
    from accelbench.safe_write import StreamError

    try:
        return _write_report(args)
    except (StreamError, BrokenPipeError):  # standard output, not the folder: cli/main.py says so
        raise
    except OSError as exc:  # a read-only or full filesystem under -o: one line, not a traceback
        raise UsageError(f"-o {args.output}: cannot write {exc.filename or args.output}: "
                         f"{exc.strerror or exc}; accepted: a folder where this user may write, "
                         f"on a filesystem with room") from None


def _write_report(args) -> int:
    from accelbench.report.build import build_report
    from accelbench.store.db import Store

    _require_matplotlib()
    with Store(args.db, create=False) as store:
        if not store.runs(limit=1):
            raise UsageError(f"no runs are stored in {store.path} yet: try `accelbench run` first")
        files = build_report(store, list(args.runs), args.output)
    from accelbench.terminal import plain_width, printable, wrapped

    def show(text: str, first: str = "") -> None:  # at the width, a long path folded
        print("\n".join(wrapped(printable(text), plain_width(), first, "    ")))

    show(f"report for run(s) {', '.join(files.run_ids)}: {files.html_path}")
    for path in files.png_paths:
        show(str(path), "  figure: ")
    for note in files.missing:  # diagnostics on stderr stay one line each, for grep
        print(printable(f"  not drawn: {note}"), file=sys.stderr)
    return 0
