"""`accelbench fleet`: one sweep of a cluster (`submit --each-node`), node type by node type: each
node's headline figures beside its type's median, the slow nodes flagged (no reference values:
the spread is learnt from the fleet and its stored history), and the nodes that failed or were
not measured. Gathers the results folder first (importing again adds nothing).

Exit status, for cron and CI: 0 nothing found; 1 a node counted by --fail-on (default: outlier,
failed); 3 nothing counted but jobs are still queued or running.

A health-check sweep (`submit --each-node check`) is shown as its table of node verdicts instead
(cluster/check_sweep.py), with the check's exit status: 1 a node FAIL, 3 inconclusive, else 0.
"""
from __future__ import annotations

import sys

from accelbench.terminal import printable

EXIT_FOUND, EXIT_STILL_RUNNING = 1, 3
FAIL_ON = ("outlier", "failed", "unmeasured", "unjudged")


def add_arguments(parser) -> None:
    from accelbench.cli import validate
    from accelbench.cluster import DEFAULT_RESULTS_DIR

    parser.add_argument("results_dir", nargs="?", metavar="RESULTS_DIR", type=validate.path("the results folder"),
                        help=f"the --results-dir of `accelbench submit --each-node` (default ./{DEFAULT_RESULTS_DIR} "
                             f"when it exists, else the database's latest gathered sweep)")
    parser.add_argument("--submission", metavar="ID", type=validate.nonempty("a submission id, or latest"),
                        default="latest", help="which sweep (default: latest)")
    parser.add_argument("--db", metavar="PATH", type=validate.DB, help="results database")
    parser.add_argument("--fail-on", default="outlier,failed", metavar="KINDS", type=fail_on_kinds,
                        help=f"what makes the exit status 1: comma-separated from {', '.join(FAIL_ON)} "
                             f"(unjudged: a measured node with no result to compare), or none "
                             f"(default: outlier,failed)")
    parser.add_argument("--include-noisy", action="store_true",
                        help="also compare results whose verdict is noisy (a busy shared machine); "
                             "default: valid results only")
    parser.add_argument("--json", action="store_true", help="print the fleet view as JSON")
    parser.add_argument("--html", metavar="DIR", type=validate.folder("the fleet page (index.html)"),
                        help="also write the fleet page (index.html, with a figure) into DIR")


def parse_fail_on(text: str) -> set[str]:
    """'outlier,failed' -> {"outlier", "failed"}; 'none' -> set(); anything else refused."""
    from accelbench.errors import UsageError

    chosen = {part.strip() for part in text.split(",") if part.strip()}
    if chosen == {"none"}:
        return set()
    unknown = sorted(chosen - set(FAIL_ON))
    if unknown or not chosen:
        raise UsageError(f"{text!r} is not accepted; accepted: comma-separated from {', '.join(FAIL_ON)}, or none")
    return chosen


def fail_on_kinds(text: str) -> str:
    """The parser's check of --fail-on (the value stays text: run() parses it again)."""
    import argparse

    from accelbench.errors import UsageError

    try:
        parse_fail_on(text)
    except UsageError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


def run(args) -> int:
    import json
    from pathlib import Path

    from accelbench.cluster import DEFAULT_RESULTS_DIR
    from accelbench.cluster.fleet import build_fleet, entries_from_outcomes, entries_from_store
    from accelbench.cluster.manifest import manifest_path
    from accelbench.errors import UsageError
    from accelbench.safe_write import check_target, database_files
    from accelbench.store.db import Store

    fail_on = parse_fail_on(args.fail_on)
    verdicts = ("valid", "noisy") if args.include_noisy else ("valid",)
    folder = Path(args.results_dir or DEFAULT_RESULTS_DIR).expanduser().absolute()
    if args.results_dir and not manifest_path(folder).exists():
        raise UsageError(f"{folder}: no job manifest here; accepted: the --results-dir of an `accelbench submit`")
    checks = _check_sweep(folder, args.submission)
    if checks:  # a health-check sweep (`submit --each-node check`): verdicts, no database
        from accelbench.cli.submit_cmd import report_checks

        return report_checks(folder, checks, None, checks[-1].submission, as_json=args.json)
    gathering = manifest_path(folder).exists()  # gathering imports runs; the fleet view alone only reads
    with Store(args.db, create=gathering) as store:
        inputs = database_files(store.path)
        if args.html:  # a planted link or the database itself: refused before gathering
            check_target(Path(args.html) / "index.html", inputs)
        if gathering:
            from accelbench.cluster.gather import gather, select
            from accelbench.cluster.manifest import load_manifest

            records = select(load_manifest(folder), args.submission)
            report = gather(folder, store, records=records)
            imported = sum(len(o.imported) for o in report.outcomes)
            print(printable(f"gathered {folder}: {imported} run(s) newly imported into {store.path}"
                            + (f" (Slurm could not be asked: {report.slurm_error})" if report.slurm_error else "")),
                  file=sys.stderr)
            if report.unremembered:
                print(printable(f"note: {report.unremembered}"), file=sys.stderr)
            submission = records[-1].submission if records else ""
            view = build_fleet(store, entries_from_outcomes(report.outcomes), submission, verdicts)
        else:
            submission, entries = entries_from_store(store, args.submission)
            view = build_fleet(store, entries, submission, verdicts)
    if args.json:
        print(json.dumps(view.to_dict(), indent=1))
    else:
        print_fleet(view)
    if args.html:
        from accelbench.cluster.fleet_html import write_fleet_page

        page = write_fleet_page(view, args.html, inputs)
        print(f"fleet page: {page}", file=sys.stderr if args.json else sys.stdout)
    found = ((bool(view.outliers()) and "outlier" in fail_on) or (bool(view.nodes("failed")) and "failed" in fail_on)
             or (bool(view.nodes("unmeasured")) and "unmeasured" in fail_on)
             or (bool(view.unjudged()) and "unjudged" in fail_on))
    if found:
        return EXIT_FOUND
    return EXIT_STILL_RUNNING if view.nodes("pending") else 0


def _check_sweep(folder, submission: str) -> list:
    """The chosen submission's records when it is a health-check sweep, else []."""
    from accelbench.cluster.gather import select
    from accelbench.cluster.manifest import CHECK, load_manifest, manifest_path

    if not manifest_path(folder).exists():
        return []
    manifest = load_manifest(folder)
    if not manifest:  # nothing submitted yet: the benchmark view says so (after opening the database)
        return []
    records = select(manifest, submission)
    return records if records and all(r.kind == CHECK for r in records) else []


def print_fleet(view, out=None) -> None:
    """The fleet view as text that fits the terminal (80 columns when piped): long lines wrap
    with a hanging indent, words and labels whole."""
    out = out or sys.stdout
    import shutil
    import textwrap

    from accelbench.cluster.outliers import Z
    from accelbench.units import format_si

    width = max(60, shutil.get_terminal_size((80, 24)).columns)

    def say(text: str = "", indent: int = 0) -> None:
        lines = textwrap.wrap(printable(text), width, initial_indent=" " * indent,
                              subsequent_indent=" " * (indent + 4), break_long_words=False,
                              break_on_hyphens=False) or [""]
        print("\n".join(lines), file=out)

    say(f"fleet of sweep {view.submission}: only results with verdict {' or '.join(view.verdicts)} are "
        f"compared; a node is an outlier {Z:g} robust sigmas below its type's median")
    for node_type in view.types:
        counts = ", ".join(f"{node_type.count(s)} {s.replace('unmeasured', 'not measured')}"
                           for s in ("measured", "failed", "pending", "unmeasured") if node_type.count(s))
        say()
        say(f"node type {node_type.node_type}: {len(node_type.nodes)} node(s): {counts}")
        for headline in node_type.headlines:
            unit, spread = headline.unit, headline.spread
            say(headline.label, 2)
            say(f"type median {format_si(headline.median, unit)}, spread ±{spread.relative:.1%}: outlier "
                f"below {spread.threshold:.2f}× the median ({spread.source})", 4)
            if any(j.verdict == "not judged" for j in headline.judgements):
                say("fewer than 3 nodes measured it: shown, not judged", 4)
            for judgement in sorted(headline.judgements, key=lambda j: j.ratio):
                figure = headline.figures[judgement.node]
                mark = {"outlier": "OUTLIER", "ok": "ok", "not judged": "-"}[judgement.verdict]
                say(f"{judgement.node:<12} {format_si(figure.value, unit):>12} ±{figure.spread:.1%}  "
                    f"{judgement.ratio:.2f}×  z {judgement.z + 0.0:+.1f}  {mark} [{figure.verdict}]", 4)
    say()
    outliers = view.outliers()
    for node_type, headline, judgement in outliers:
        say(f"OUTLIER {judgement.node} ({node_type.node_type}): {headline.label}: {judgement.ratio:.2f}× its "
            f"type's median, {-judgement.z:.1f} sigmas below")
    for entry in view.nodes("failed"):
        say(f"FAILED {entry.node}: {entry.detail}")
        for line in entry.log_tail[-6:]:
            say(f"| {line}", 4)
    for entry in view.nodes("unmeasured"):
        say(f"NOT MEASURED {entry.node}: {entry.detail}")
    for entry in view.nodes("pending"):
        say(f"PENDING {entry.node}: {entry.detail} (run `accelbench fleet` again once it ended)")
    for node, why in view.unjudged().items():
        say(f"NOT COMPARED {node}: {why}")
    if not (outliers or view.nodes("failed") or view.nodes("unmeasured") or view.nodes("pending") or view.unjudged()):
        say("no outlier, no failed node, every node measured and compared")
