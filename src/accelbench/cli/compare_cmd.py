"""`accelbench compare A B`: run B against baseline run A, spec by spec; `--reference RUN`: one run
among the seeds' published figures and datasheet peaks.

A and B are run ids, unique id prefixes, latest, latest~N, or files written by `accelbench export`
(FILE.json, or FILE.json#RUN when it holds several runs), read and validated without importing.
Exit status (report/compare/gate.py): 0, or with --fail-if-slower: 0 decided, no slowdown beyond the
threshold; 1 a significant slowdown above the threshold, also outside the spec's run-to-run noise band
(compare/noise.py); 3 could not be decided (a slowdown beyond the threshold is not ruled out for some
spec: within noise, a noisy result, a machine that moved as much as the specs). 2: bad input; 1 also
when the runs share no spec.
"""
from __future__ import annotations

import json
import sys

from accelbench.errors import UsageError

DEFAULT_PAIR = ("latest~1", "latest")
PAIR_SEARCH = 50  # runs looked back through for one that shares a spec with the latest
UNDECIDED_SHOWN = 5  # undecided specs listed on stderr


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("runs", nargs="*", metavar="RUN",
                        help="baseline A then candidate B: run id, unique prefix, latest, latest~N, or an "
                             "exported FILE.json[#RUN] (default: latest~1 latest)")
    parser.add_argument("--reference", metavar="RUN",
                        type=validate.nonempty("a run id, unique prefix, latest, latest~N or FILE.json[#RUN]"),
                        help="instead: place RUN among the seeds' published figures and datasheet peaks")
    parser.add_argument("--fail-if-slower", type=validate.percent(above=0, up_to=1e6, closed_below=True),
                        metavar="PCT",
                        help="for CI: exit 1 when a spec is significantly slower in B by more than PCT percent "
                             "(point estimate of the ratio of medians) and beyond its run-to-run noise band; exit 3 "
                             "when that could not be decided (a slowdown beyond PCT not ruled out for some spec, "
                             "e.g. the machine itself moved as much); exit 0 only when decided and no such slowdown")
    parser.add_argument("--same-within", type=validate.percent(above=0, up_to=100), default=10.0, metavar="PCT",
                        help="call a spec 'same' only when the 95%% interval of its speed-up lies within "
                             "±PCT%% of 1, and faster/slower only beyond it (default 10, as asv)")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON")
    parser.add_argument("--db", metavar="PATH", type=validate.DB, help="results database (default: $ACCELBENCH_DB or the user data dir)")
    parser.epilog = ("exit status: 0 compared (with --fail-if-slower: decided, no slowdown beyond PCT); "
                     "1 a significant slowdown beyond PCT and beyond run-to-run noise, or no spec shared; "
                     "2 bad input; 3 --fail-if-slower could not be decided (a slowdown beyond PCT is not ruled "
                     "out for some spec: within its noise band, a noisy result, or the machine itself moved as "
                     "much, as its machine reference shows)")


def _check_options(args) -> None:
    if args.fail_if_slower is not None and args.fail_if_slower < 0:
        raise UsageError(f"--fail-if-slower: {args.fail_if_slower:g} is negative; accepted: a percentage >= 0")
    if not 0 < args.same_within < 100:
        raise UsageError(f"--same-within: {args.same_within:g} is outside (0, 100); accepted: a percentage, e.g. 5")
    if args.reference and args.runs:
        raise UsageError(f"--reference takes one run; drop {' '.join(args.runs)!r} or drop --reference")
    if not args.reference and len(args.runs) not in (0, 2):
        raise UsageError(f"compare needs two runs (baseline A, candidate B), got {len(args.runs)}: "
                         f"{' '.join(args.runs)}")


def load_ref(ref: str, db: str | None):
    from accelbench.report.compare.sources import load_run, looks_like_file
    from accelbench.store.db import Store

    try:
        if not looks_like_file(ref):
            Store(db, create=False).close()  # reading only: a missing database is not created
        return load_run(ref, db)
    except UsageError as exc:  # every message names the bad reference, whatever layer raised it
        message = str(exc)
        raise UsageError(message if ref in message else f"{ref!r}: {message}") from None


def print_json(document) -> None:
    from accelbench.results import finite

    json.dump(finite(document), sys.stdout, indent=2, allow_nan=False)
    sys.stdout.write("\n")


def _console():
    from accelbench.terminal import console

    return console()


def _reference(args) -> int:
    from accelbench.report.compare.reference import reference_report
    from accelbench.report.compare.render import render_reference

    run = load_ref(args.reference, args.db)
    if args.json:
        print_json(reference_report(run))
    else:
        render_reference(run, _console())
    return 0


def run(args) -> int:
    from accelbench.report.compare.compare import compare_runs
    from accelbench.report.compare.gate import gate
    from accelbench.report.compare.render import render_comparison

    _check_options(args)
    if args.reference:
        return _reference(args)
    ref_a, ref_b = args.runs or _default_pair(args.db)
    comparison = compare_runs(load_ref(ref_a, args.db), load_ref(ref_b, args.db), same_within=args.same_within / 100)
    decision = None if args.fail_if_slower is None else gate(comparison, args.fail_if_slower)
    if args.json:
        document = comparison.to_dict()
        if decision is not None:
            document["fail_if_slower"] = decision.to_dict()
        print_json(document)
    else:
        render_comparison(comparison, _console())
    if not comparison.rows:
        print(_nothing_shared(comparison), file=sys.stderr)
        return 1
    return 0 if decision is None else _report_gate(decision)


def _default_pair(db: str | None) -> tuple[str, str]:
    """The latest run and the latest one before it that shares a spec with it (`latest` counts the
    command line's runs), said on stderr; latest~1 and latest when none shares one."""
    from accelbench.store.db import Store

    with Store(db, create=False) as store:
        newest = store.resolve_run("latest")
        wanted = store.spec_keys(newest)
        for back in range(1, PAIR_SEARCH + 1):
            try:
                earlier = store.resolve_run(f"latest~{back}")
            except UsageError:
                break
            if store.spec_keys(earlier) & wanted:
                print(f"accelbench compare: latest~{back} ({earlier}) against latest ({newest}), the two latest "
                      f"runs that share specs", file=sys.stderr)
                return earlier, newest
    return DEFAULT_PAIR


def _report_gate(decision) -> int:
    """The gate's line on stderr (with each failing or undecided spec); its exit code."""
    import textwrap

    from accelbench.terminal import output_width, printable

    width = output_width(sys.stderr) or 80

    def said(text: str, indent: str = "") -> None:
        # wrapped to the width (80 when piped, issue 42: a verdict once ran to 386 columns); each
        # entry's first line still starts as it did, for grep
        print(textwrap.fill(printable(text), width=width, initial_indent=indent, subsequent_indent=indent + "    ",
                            break_long_words=False, break_on_hyphens=False), file=sys.stderr)
    said(f"accelbench compare: {decision.text()}")
    for r in decision.failing:
        said(f"{r.label}: {r.why_slower()}", "  ")
    for r in decision.undecided[:UNDECIDED_SHOWN]:
        said(f"undecided {r.label}: {r.verdict_text()}" + (f"; {r.note}" if r.note else ""), "  ")
    if len(decision.undecided) > UNDECIDED_SHOWN:
        said(f"and {len(decision.undecided) - UNDECIDED_SHOWN} more undecided (--json lists them all)", "  ")
    return decision.exit_code


def _nothing_shared(comparison) -> str:
    """Two runs with no spec in common: say what each measured and how to get a comparison."""
    from accelbench.terminal import printable

    def workloads(specs) -> str:
        return ", ".join(sorted({s.workload for s in specs})) or "nothing"
    return printable(f"accelbench compare: the two runs share no spec (same workload, backend, device and "
                     f"parameters): A measured {workloads(comparison.only_a)}, B measured "
                     f"{workloads(comparison.only_b)}; compare runs of the same workloads, sizes and dtypes "
                     f"(`accelbench runs` lists each run's workloads)")
