"""`accelbench submit`: run the same suite as Slurm batch jobs, one per node, partition or GPU type.

Each job runs `python -m accelbench run <selection>` on its node and exports the run into the
results folder (which must be on a filesystem the nodes share); `accelbench gather` (or --wait)
brings the results into the local database. docs/cluster.md describes the options in full.

`accelbench submit --each-node check` runs the health check (`accelbench check --json`) on every
node instead, and with --wait prints one table of each node's verdict and failing checks
(cluster/check_sweep.py; docs/health-check.md); `accelbench fleet DIR` prints it again later.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from accelbench.cluster import DEFAULT_RESULTS_DIR, DEFAULT_WAIT_TIMEOUT_S
from accelbench.cluster.manifest import CHECK, RUN
from accelbench.health.model import LEVELS


def add_arguments(parser) -> None:
    from accelbench.backends.base import DTYPES
    from accelbench.cli import validate
    from accelbench.vocabulary import RIGOR_NAMES

    sel = parser.add_argument_group("what each job runs (the options of `accelbench run`)")
    sel.add_argument("workloads", nargs="*", metavar="WORKLOAD", type=workloads_or_check,
                     action=validate.Flatten, help="workloads (default: the quick suite), or `check`: the "
                                                   "health check on each node (docs/health-check.md)")
    sel.add_argument("--check-level", choices=LEVELS, default="quick",
                     help="with `check`: the check's level (default quick: seconds per node)")
    sel.add_argument("--sizes", type=validate.sizes, help="comma-separated sizes, as for `accelbench run`")
    sel.add_argument("--dtype", type=validate.DTYPES, help=f"comma-separated dtypes ({', '.join(DTYPES)})")
    sel.add_argument("--device", type=validate.DEVICES, help="comma-separated device ids, as the nodes' `accelbench info` shows them")
    sel.add_argument("--backend", type=validate.BACKENDS, help="comma-separated backends (numpy, torch, jax, cupy, pyopencl)")
    sel.add_argument("--rigor", choices=RIGOR_NAMES, help="as for `accelbench run`")
    sel.add_argument("--quick", action="store_true", help="use the workloads' small quick grids")
    sel.add_argument("--seed", type=validate.SEED, help=f"seed for the random inputs, 0 to {validate.MAX_SEED}")
    add_slurm_arguments(parser)
    add_wait_arguments(parser)


def workloads_or_check(text: str) -> list[str]:
    """`check` alone (the health check), else workload names as `accelbench run` takes them."""
    from accelbench.cli import validate

    return [CHECK] if text.strip() == CHECK else validate.workloads(text)


def is_check(args) -> bool:
    from accelbench.errors import UsageError

    if CHECK not in args.workloads:
        return False
    if args.workloads != [CHECK]:
        raise UsageError("`check` runs the health check and takes no workloads beside it; accepted: "
                         "`accelbench submit --each-node check`, or workloads without `check`")
    given = [f"--{name.replace('_', '-')}" for name in ("sizes", "dtype", "device", "backend", "rigor", "seed")
             if getattr(args, name) is not None] + (["--quick"] if args.quick else [])
    if given:
        raise UsageError(f"{', '.join(given)}: options of `accelbench run`, not of `check` (it checks every "
                         f"device at --check-level)")
    return True


def add_slurm_arguments(parser) -> None:
    from accelbench.cli import validate

    slurm = parser.add_argument_group("where the jobs run (Slurm)")
    slurm.add_argument("--each-node", action="store_true",
                       help="one job on EVERY node of the chosen --partition / --nodelist / --constraint "
                            "(all nodes when none is given), each pinned to its node; down or drained "
                            "nodes are listed as not measured, with Slurm's reason")
    slurm.add_argument("--partition", help="comma-separated partitions: one job per partition (see --jobs-per)")
    slurm.add_argument("--nodelist", help="comma-separated nodes or a hostlist (gpu[01-04]): one job per node")
    slurm.add_argument("--gres", action="append", default=[], metavar="GRES",
                       help="generic resources, e.g. gpu:1 or gpu:a100:1; repeat for one job per GPU type")
    slurm.add_argument("--constraint", action="append", default=[], metavar="FEATURES",
                       help="node features, e.g. a100; repeat for one job per feature set")
    slurm.add_argument("--jobs-per", metavar="DIMS",
                       help="which lists become separate jobs: comma-separated from partition, gres, "
                            "constraint (default: all; nodes are always one job each)")
    slurm.add_argument("--repeat", type=validate.whole_number(1, validate.MAX_COUNT), default=1, metavar="N", help="N jobs per target (default 1)")
    slurm.add_argument("--max-jobs", type=validate.whole_number(1, validate.MAX_COUNT), default=64, metavar="N", help="refuse to submit more (default 64)")
    slurm.add_argument("--exclusive", action="store_true", help="no other job on the node while it measures")
    slurm.add_argument("--time", metavar="LIMIT", help="time limit per job, e.g. 00:30:00 (sbatch --time)")
    slurm.add_argument("--cpus-per-task", type=validate.whole_number(1, validate.MAX_COUNT), metavar="N", help="CPUs for the job (sbatch --cpus-per-task)")
    slurm.add_argument("--account", help="sbatch --account")
    slurm.add_argument("--qos", help="sbatch --qos")
    slurm.add_argument("--sbatch-arg", action="append", default=[], metavar="OPTION",
                       help="any other sbatch option, e.g. --sbatch-arg=--mem=16G (repeatable)")
    slurm.add_argument("--results-dir", default=DEFAULT_RESULTS_DIR, metavar="DIR",
                       help=f"shared folder for scripts, logs, results, manifest (default ./{DEFAULT_RESULTS_DIR})")
    slurm.add_argument("--python", default=sys.executable, metavar="PATH",
                       help="Python with accelbench on the compute nodes (default: this one)")
    slurm.add_argument("--dry-run", action="store_true", help="write and print the batch scripts; submit nothing")


def add_wait_arguments(parser) -> None:
    from accelbench.cli import validate

    wait = parser.add_argument_group("waiting and gathering")
    wait.add_argument("--wait", action="store_true", help="wait for the jobs, then gather their results")
    wait.add_argument("--timeout", type=validate.WAIT_TIMEOUT, default=DEFAULT_WAIT_TIMEOUT_S, metavar="SECONDS",
                      help=f"stop waiting after this long (default {DEFAULT_WAIT_TIMEOUT_S:.0f})")
    wait.add_argument("--poll", type=validate.POLL, default=5.0, metavar="SECONDS", help="seconds between queries (default 5)")
    wait.add_argument("--db", metavar="PATH", type=validate.DB, help="local results database to gather into")


def run_arguments(args) -> list[str]:
    """The `accelbench run` arguments every job gets, checked here so a typo fails before any job."""
    from accelbench.backends.base import DTYPES
    from accelbench.backends.registry import backend_names
    from accelbench.errors import UsageError
    from accelbench.runner.plan import parse_list, parse_sizes
    from accelbench.workloads.registry import workload_names

    if is_check(args):
        return ["--level", args.check_level]
    for name in args.workloads:
        if name not in workload_names():
            raise UsageError(f"unknown workload {name!r}; accepted: {', '.join(workload_names())}")
    parse_sizes(args.sizes)
    parse_list(args.dtype, DTYPES, "--dtype")
    parse_list(args.backend, backend_names(), "--backend")
    argv = list(args.workloads)
    for option in ("sizes", "dtype", "device", "backend", "rigor", "seed"):
        value = getattr(args, option)
        if value is not None:
            argv += [f"--{option}", str(value)]
    return argv + (["--quick"] if args.quick else [])


def _results_dir(text: str) -> Path:
    from accelbench.cluster.sbatch_values import check_path

    check_path("--results-dir", text)  # before Path: a NUL or newline never reaches the filesystem
    folder = Path(text).expanduser().absolute()
    check_path("--results-dir", folder)
    return folder


def _settings(args, results_dir: Path):
    from accelbench.cluster.sbatch_values import check_option
    from accelbench.cluster.script import JobSettings, check_settings
    from accelbench.errors import UsageError

    if args.cpus_per_task is not None and args.cpus_per_task < 1:
        raise UsageError(f"--cpus-per-task: {args.cpus_per_task} is not a whole number >= 1")
    return check_settings(JobSettings(
        run_args=tuple(run_arguments(args)), python=args.python, results_dir=results_dir,
        workdir=Path.cwd(), time=check_option("--time", args.time), exclusive=args.exclusive,
        cpus_per_task=args.cpus_per_task, account=check_option("--account", args.account),
        qos=check_option("--qos", args.qos),
        extra_sbatch=tuple(check_option("--sbatch-arg", option) for option in args.sbatch_arg),
        kind=CHECK if is_check(args) else RUN))


def _targets(args):
    """(targets, sweep): the jobs to submit; sweep (nodes.Sweep) only under --each-node."""
    from accelbench.cluster.sbatch_values import check_option
    from accelbench.cluster.script import check_target
    from accelbench.cluster.slurm import expand_nodelist
    from accelbench.cluster.targets import expand_targets, parse_jobs_per, split_list

    # each value as the user typed it, so the error names it; then every target as written
    check_option("--nodelist", args.nodelist)
    check_option("--partition", args.partition)
    gres = [check_option("--gres", g) for g in args.gres if g.strip(" ")]
    constraints = [check_option("--constraint", c) for c in args.constraint if c.strip(" ")]
    if args.each_node:
        from accelbench.cluster.nodes import choose_nodes, cluster_nodes, plan_sweep

        partitions = split_list(args.partition)
        chosen = choose_nodes(cluster_nodes(), partitions=partitions, names=expand_nodelist(args.nodelist),
                              constraints=constraints)
        sweep = plan_sweep(chosen, partitions=partitions, gres=gres, repeat=args.repeat, max_jobs=args.max_jobs)
        return [check_target(target) for target in sweep.targets], sweep
    targets = expand_targets(nodes=expand_nodelist(args.nodelist), partitions=split_list(args.partition),
                             gres=gres, constraints=constraints, repeat=args.repeat,
                             jobs_per=parse_jobs_per(args.jobs_per), max_jobs=args.max_jobs)
    return [check_target(target) for target in targets], None


def submit_all(settings, targets, submission: str, out=None, dry_run: bool = False, sweep=None) -> list:
    """Write each target's script, hand it to sbatch, record it in the manifest at once (so a
    job is never lost, even if this process dies half-way); returns the records."""
    out = out or sys.stdout  # looked up per call: callers and tests swap sys.stdout
    from accelbench.cluster.manifest import JobRecord, add_jobs, check_lock
    from accelbench.cluster.script import render_script
    from accelbench.cluster.slurm import submit
    from accelbench.store.db import utc_now_iso
    from accelbench.terminal import printable

    from accelbench.safe_write import write_text

    scripts = settings.results_dir / "scripts"
    _make_folders(settings.results_dir)
    if not dry_run:
        check_lock(settings.results_dir)  # a job sbatch took is recorded: refused before any is sent
    records = []
    for index, target in enumerate(targets, start=1):
        script = scripts / f"{submission}-{index}.sbatch"
        text = render_script(settings, target, f"submission {submission}, job {index} of "
                                               f"{len(targets)}: {target.label()}")
        write_text(script, text)
        if dry_run:
            print(f"# {script}\n{text}", file=out)
            continue
        sent = submit(script)
        record = JobRecord(submission=submission, index=index, target=target,
                           script=str(script.relative_to(settings.results_dir)),
                           submitted_at=utc_now_iso(), command=settings.run_args,
                           job_id=sent.job_id, rejected=None if sent.job_id else sent.message,
                           node_info=_node_info(sweep, target.node), kind=settings.kind)
        add_jobs(settings.results_dir, [record])
        records.append(record)
        if sent.job_id:
            print(f"submitted job {sent.job_id}: {target.label()}", file=out, flush=True)
        else:
            print(f"sbatch refused job {index} ({target.label()}): {printable(sent.message)}", file=out, flush=True)
    if sweep is not None and dry_run:
        for node in sweep.unmeasured:
            print(printable(f"# not measured: node {node.name}: {node.why_not_measured()}"), file=out)
    elif sweep is not None:
        records += record_unmeasured(settings, sweep, submission, len(targets), out)
    return records


def _make_folders(results_dir: Path) -> None:
    from accelbench.errors import UsageError

    for sub in ("scripts", "logs", "jobs"):
        try:
            (results_dir / sub).mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a read-only folder, or a regular file on the way
            blocker = next((p for p in (results_dir / sub).parents if p.exists() and not p.is_dir()), None)
            why = f"{blocker} is a file, not a folder" if blocker else (exc.strerror or str(exc))
            raise UsageError(f"--results-dir {results_dir}: cannot make {results_dir / sub}: {why}; accepted: "
                             f"a folder this user may write in (on the shared filesystem)") from None


def _node_info(sweep, node: str | None) -> dict[str, str]:
    known = sweep.node_of.get(node or "") if sweep is not None else None
    return known.info() if known is not None else {}


def record_unmeasured(settings, sweep, submission: str, jobs: int, out) -> list:
    """The nodes --each-node sent no job to, in the manifest with Slurm's reason, so `gather` and
    `fleet` name them as not measured."""
    from accelbench.cluster.manifest import JobRecord, add_jobs
    from accelbench.cluster.targets import Target
    from accelbench.store.db import utc_now_iso
    from accelbench.terminal import printable

    records = [JobRecord(submission=submission, index=jobs + i, target=Target(node=node.name), script="",
                         submitted_at=utc_now_iso(), command=settings.run_args, node_info=node.info(),
                         unmeasured=node.why_not_measured(), kind=settings.kind)
               for i, node in enumerate(sweep.unmeasured, start=1)]
    if records:
        add_jobs(settings.results_dir, records)
    for record in records:
        print(printable(f"not measured: node {record.target.node}: {record.unmeasured}"), file=out, flush=True)
    return records


def run(args) -> int:
    from accelbench.cli.gather_cmd import gather_and_report, wait_and_report
    from accelbench.store.db import new_run_id

    results_dir = _results_dir(args.results_dir)
    settings, (targets, sweep) = _settings(args, results_dir), _targets(args)
    submission = new_run_id()
    records = submit_all(settings, targets, submission, dry_run=args.dry_run, sweep=sweep)
    if args.dry_run:
        print(f"dry run: {len(targets)} batch script(s) written to {results_dir / 'scripts'}; nothing submitted")
        return 0
    job_ids = [r.job_id for r in records if r.job_id]
    unmeasured = sum(1 for r in records if r.unmeasured)
    refused = len(records) - len(job_ids) - unmeasured
    print(f"submission {submission}: {len(job_ids)} job(s) submitted" +
          (f", {refused} refused by sbatch" if refused else "") +
          (f", {unmeasured} node(s) not measured (down or drained)" if unmeasured else "") +
          f"; results folder {results_dir}")
    if not args.wait:
        if job_ids:
            then = "fleet" if settings.kind == CHECK else "gather"
            print(f"when they finish: accelbench {then} {_shown(results_dir)} --submission {submission}")
        return 1 if refused else 0
    known, _ = wait_and_report(job_ids, timeout_s=args.timeout, poll_s=args.poll, records=records)
    if settings.kind == CHECK:
        return report_checks(results_dir, records, known, submission)
    return gather_and_report(results_dir, args.db, records=records, known=known)


def report_checks(results_dir: Path, records: list, known, submission: str, as_json: bool = False, out=None) -> int:
    """A check sweep's table (or JSON): each node's verdict and the checks that did not pass."""
    import json

    from accelbench.cluster import check_sweep
    from accelbench.terminal import plain_width, printable

    out = out or sys.stdout
    rows, slurm_error, unremembered = check_sweep.sweep(results_dir, records, known)
    if slurm_error:
        print(printable(f"note: Slurm could not be asked ({slurm_error}); states come from the files"),
              file=sys.stderr if as_json else out)
    if unremembered:  # a write that failed is said, even when the verdicts are whole
        print(printable(f"note: {unremembered}"), file=sys.stderr)
    if as_json:
        print(json.dumps(check_sweep.to_dict(rows, submission), indent=1), file=out)
    else:
        check_sweep.render(rows, submission, out, plain_width(out))
    return check_sweep.exit_code(rows)


def _shown(folder: Path) -> str:
    try:
        return os.path.relpath(folder)
    except ValueError:  # another drive (Windows)
        return str(folder)
