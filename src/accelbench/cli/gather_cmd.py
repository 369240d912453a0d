"""`accelbench gather`: import finished cluster jobs' results into the local database.

Reads the manifest that `accelbench submit` keeps in the results folder, asks Slurm about each
job, imports every results file (validated; again adds nothing), and reports every job that did
not succeed with its Slurm state and the tail of its logs.
Exit status: 0 every job succeeded and its results are in the database; 1 a job failed, was
refused by sbatch, or left no usable results; 3 none failed but some are still queued or running.
"""
from __future__ import annotations

import sys

# job logs and Slurm's answers are shown as text, never as terminal codes
from accelbench.terminal import printable

EXIT_FAILED, EXIT_STILL_RUNNING = 1, 3


def add_arguments(parser) -> None:
    from accelbench.cli import validate
    from accelbench.cluster import DEFAULT_RESULTS_DIR, DEFAULT_WAIT_TIMEOUT_S

    parser.add_argument("results_dir", nargs="?", default=DEFAULT_RESULTS_DIR, metavar="RESULTS_DIR",
                        type=validate.path("the results folder"),
                        help=f"the folder given to `accelbench submit --results-dir` (default ./{DEFAULT_RESULTS_DIR})")
    parser.add_argument("--submission", metavar="ID", type=validate.nonempty("a submission id, or latest"),
                        help="only this submission's jobs (`latest` for the last one); default: every job")
    parser.add_argument("--db", metavar="PATH", type=validate.DB, help="results database to import into")
    parser.add_argument("--wait", action="store_true", help="first wait for the jobs still queued or running")
    parser.add_argument("--timeout", type=validate.WAIT_TIMEOUT, default=DEFAULT_WAIT_TIMEOUT_S, metavar="SECONDS",
                        help=f"stop waiting after this long (default {DEFAULT_WAIT_TIMEOUT_S:.0f})")
    parser.add_argument("--poll", type=validate.POLL, default=5.0, metavar="SECONDS", help="seconds between queries (default 5)")


def run(args) -> int:
    from pathlib import Path

    from accelbench.cluster.gather import select
    from accelbench.cluster.manifest import load_manifest, manifest_path
    from accelbench.errors import UsageError

    folder = Path(args.results_dir).expanduser().absolute()
    if not manifest_path(folder).exists():
        raise UsageError(f"{folder}: no job manifest ({manifest_path(folder).name}) here; accepted: "
                         f"the --results-dir of an `accelbench submit`")
    records = select(load_manifest(folder), args.submission)
    known = None
    if args.wait:
        known, _ = wait_and_report([r.job_id for r in records if r.job_id],
                                   timeout_s=args.timeout, poll_s=args.poll, records=records)
    return gather_and_report(folder, args.db, records=records, known=known)


def wait_and_report(job_ids: list[str], *, timeout_s: float, poll_s: float, out=None, records=None):
    """Wait (bounded) for the jobs, printing each state change with its node, and after each poll
    that changed anything how many are done, pending or running, and failed; returns (states, all
    ended)."""
    out = out or sys.stdout  # looked up per call, not at import: callers and tests swap sys.stdout
    import time

    from accelbench.cluster.slurm import wait

    started = time.monotonic()
    asked_node = {r.job_id: r.target.node for r in records or () if r.job_id and r.target.node}
    last: dict = {}

    def changed(state) -> None:
        node = state.node or asked_node.get(state.job_id, "")
        where = f" on {node}" if node else ""
        print(printable(f"  {time.monotonic() - started:6.1f} s  job {state.job_id}: {state.state}{where}"),
              file=out, flush=True)

    def polled(states, active) -> None:
        counts = progress_counts(job_ids, states, active)
        if counts != last:
            last.update(counts)
            print(f"  {time.monotonic() - started:6.1f} s  {counts['done']} done, {counts['pending']} pending, "
                  f"{counts['running']} running, {counts['failed']} failed", file=out, flush=True)

    if not job_ids:
        return {}, True
    print(f"waiting for {len(job_ids)} job(s), at most {timeout_s:.0f} s", file=out, flush=True)
    states, finished = wait(job_ids, timeout_s=timeout_s, poll_s=poll_s, on_change=changed, on_poll=polled)
    if not finished:
        print(f"stopped waiting after {timeout_s:.0f} s; jobs still queued or running are reported "
              f"below, and `accelbench gather` collects them later", file=out)
    return states, finished


def progress_counts(job_ids: list[str], states, active: set[str]) -> dict[str, int]:
    """done / pending / running / failed among `job_ids`: `active` are still queued or running
    (by their last state); of the others, those Slurm said failed are failed, the rest done (a
    job Slurm forgot has ended: gather's files say how)."""
    counts = {"done": 0, "pending": 0, "running": 0, "failed": 0}
    for job_id in job_ids:
        state = states.get(job_id)
        if job_id in active:
            queued = state is None or state.state in ("PENDING", "CONFIGURING")
            counts["pending" if queued else "running"] += 1
        elif state is not None and state.category == "failed":
            counts["failed"] += 1
        else:
            counts["done"] += 1
    return counts


def gather_and_report(results_dir, db, *, records=None, known=None, out=None) -> int:
    out = out or sys.stdout
    from accelbench.cluster.gather import gather
    from accelbench.store.db import Store

    with Store(db) as store:
        report = gather(results_dir, store, known=known, records=records)
        db_path = store.path
    if report.slurm_error:
        print(printable(f"note: Slurm could not be asked ({report.slurm_error}); states come from the files"),
              file=out)
    if report.unremembered:  # a write that failed is said, even when the gathering itself succeeded
        print(printable(f"note: {report.unremembered}; the results were still gathered"), file=sys.stderr)
    for outcome in report.outcomes:
        print_outcome(outcome, out)
    imported = sum(len(o.imported) for o in report.outcomes)
    ok, failed, active, unmeasured = (report.count(s) for s in ("ok", "failed", "active", "unmeasured"))
    jobs = len(report.outcomes) - unmeasured
    print(printable(f"{jobs} job(s): {ok} ok, {failed} failed, {active} still queued or running"
                    + (f"; {unmeasured} node(s) not measured" if unmeasured else "")
                    + f"; {imported} run(s) newly imported into {db_path}"), file=out)
    if failed:
        return EXIT_FAILED
    return EXIT_STILL_RUNNING if active else 0


def print_outcome(outcome, out=None) -> None:
    out = out or sys.stdout
    record, state = outcome.record, outcome.state
    if outcome.status == "unmeasured":
        print(printable(f"[--] node {record.target.node} not measured: {state.reason}"), file=out)
        return
    name = f"job {record.job_id}" if record.job_id else f"job #{record.index} (not submitted)"
    node = state.node or record.target.label()
    runs = ""
    if outcome.imported:
        runs = f"; imported run(s) {', '.join(outcome.imported)}"
    elif outcome.present:
        runs = f"; run(s) {', '.join(outcome.present)} already in the database"
    marker = {"ok": "ok", "active": "..", "failed": "FAILED"}[outcome.status]
    print(printable(f"[{marker}] {name} ({node}): {state.describe()}{runs}"), file=out)
    if outcome.problem and outcome.problem != state.reason:
        print(printable(f"    problem: {outcome.problem}"), file=out)
    for line in outcome.log_tail:
        print(printable(f"    | {line}"), file=out)
