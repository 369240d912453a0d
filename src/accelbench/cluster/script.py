"""The batch script of one job: #SBATCH lines for its target, then run, export, status file.

The run writes to a job-local SQLite file (SQLite locking over NFS/Lustre is unreliable, and
parallel jobs must not share one database); its export lands in the shared results folder.
The script keeps going after a failed run, so a partial run (interrupted, say) is still exported,
and always writes jobs/J.status.json with both exit codes: that file tells `accelbench gather`
what happened even after Slurm has forgotten the job. The job's exit status is the first
non-zero of the two, so Slurm marks a failed benchmark FAILED.

A check job (`submit --each-node check`) runs `accelbench check --json` instead and keeps its
report (jobs/J.check.json) whatever the verdict: a faulty node is a finding, not a failed job.
The job fails only when the check could not give a verdict (bad usage, a crash, no report).
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from accelbench.cluster.manifest import (CHECK, CHECK_PATTERN, RESULT_PATTERN, RUN, STATUS_PATTERN,
                                         STDERR_PATTERN, STDOUT_PATTERN)
from accelbench.cluster.sbatch_values import (CONTROL, check_directive, check_no_control, check_node_name,
                                              check_option, check_path)
from accelbench.cluster.targets import Target

JOB_NAME = "accelbench"


@dataclass(frozen=True)
class JobSettings:
    """What every job of one submission shares."""

    run_args: tuple[str, ...]     # after `accelbench run`: workloads and selection options
    python: str                   # the interpreter on the compute nodes (shared filesystem)
    results_dir: Path             # absolute, on the shared filesystem
    workdir: Path                 # absolute: where the job starts (sbatch --chdir)
    time: str | None = None       # sbatch --time (e.g. 00:30:00)
    exclusive: bool = False       # sbatch --exclusive: no other job shares the node
    cpus_per_task: int | None = None
    account: str | None = None
    qos: str | None = None
    extra_sbatch: tuple[str, ...] = ()  # --sbatch-arg, passed as given
    kind: str = RUN               # RUN: `accelbench run` + export; CHECK: `accelbench check --json`


def _slurm_path(results_dir: Path, pattern: str) -> str:
    # %j is sbatch's own placeholder for the job id in --output/--error
    return str(results_dir / pattern.format(job_id="%j"))


def check_settings(settings: JobSettings) -> JobSettings:
    """Every value of `settings` that reaches the script, checked (UsageError naming the option)."""
    check_path("--results-dir", settings.results_dir)
    check_path("the current directory (sbatch --chdir)", settings.workdir,
               advice="; run `accelbench submit` from another folder")
    check_option("--time", settings.time)
    check_option("--account", settings.account)
    check_option("--qos", settings.qos)
    for option in settings.extra_sbatch:
        check_option("--sbatch-arg", option)
    check_no_control("--python", settings.python)
    for argument in settings.run_args:
        check_no_control("the `accelbench run` argument", argument)
    return settings


def check_target(target: Target) -> Target:
    check_option("--partition", target.partition)
    if target.node:
        check_node_name(target.node)
    check_option("--gres", target.gres)
    check_option("--constraint", target.constraint)
    return target


def sbatch_directives(settings: JobSettings, target: Target) -> list[str]:
    """The sbatch options of one job, in the order they appear as #SBATCH lines."""
    check_settings(settings)
    check_target(target)
    options = [f"--job-name={JOB_NAME}",
               f"--output={_slurm_path(settings.results_dir, STDOUT_PATTERN)}",
               f"--error={_slurm_path(settings.results_dir, STDERR_PATTERN)}",
               f"--chdir={settings.workdir}", "--nodes=1", "--ntasks=1"]
    options += target.sbatch_options()
    if settings.exclusive:
        options.append("--exclusive")
    for name, value in (("time", settings.time), ("cpus-per-task", settings.cpus_per_task),
                        ("account", settings.account), ("qos", settings.qos)):
        if value not in (None, ""):
            options.append(f"--{name}={value}")
    return [check_directive(option) for option in options + list(settings.extra_sbatch)]


def _job_file(pattern: str) -> str:
    # the job id is only known inside the job: the shell expands $SLURM_JOB_ID there
    return '"$results/' + pattern.format(job_id="$SLURM_JOB_ID") + '"'


def render_script(settings: JobSettings, target: Target, note: str) -> str:
    """The whole batch script: bash, #SBATCH lines, then the benchmark and its bookkeeping."""
    python = shlex.quote(settings.python)
    run = " ".join(shlex.quote(a) for a in settings.run_args)
    lines = ["#!/bin/bash"] + [f"#SBATCH {option}" for option in sbatch_directives(settings, target)]
    if settings.kind == CHECK:
        return "\n".join(lines + [f"# {CONTROL.sub('?', note)}"] + _check_body(python, run, settings)) + "\n"
    lines += [
        f"# {CONTROL.sub('?', note)}",
        "# written by `accelbench submit`: one benchmark run on one node, exported for `accelbench gather`",
        "set -u",
        'db="${TMPDIR:-/tmp}/accelbench-job-$SLURM_JOB_ID.sqlite"  # job-local: no SQLite over NFS',
        f"results={shlex.quote(str(settings.results_dir))}",
        f"result={_job_file(RESULT_PATTERN)}",
        f"status={_job_file(STATUS_PATTERN)}",
        'trap \'rm -f "$db" "$db-wal" "$db-shm"\' EXIT',
        'node="${SLURMD_NODENAME:-$(hostname -s)}"',
        'echo "accelbench job $SLURM_JOB_ID on $node (partition ${SLURM_JOB_PARTITION:-?}), started $(date -Is)"',
        "run_rc=0",
        f'{python} -m accelbench run {run} --db "$db" || run_rc=$?',
        "export_rc=0  # export even after a failed run: a partial run is still results",
        f'{python} -m accelbench export latest --db "$db" --output "$result" || export_rc=$?',
        "printf '{\"job_id\": \"%s\", \"node\": \"%s\", \"partition\": \"%s\", \"cluster\": \"%s\", "
        "\"run_exit_code\": %d, \"export_exit_code\": %d, \"finished_at\": \"%s\"}\\n' "
        '"$SLURM_JOB_ID" "$node" "${SLURM_JOB_PARTITION:-}" "${SLURM_CLUSTER_NAME:-}" '
        '"$run_rc" "$export_rc" "$(date -Is)" > "$status.tmp" && mv "$status.tmp" "$status"',
        'echo "accelbench job $SLURM_JOB_ID finished $(date -Is): run exit $run_rc, export exit $export_rc"',
        'if [ "$run_rc" -ne 0 ]; then exit "$run_rc"; fi',
        'exit "$export_rc"',
    ]
    return "\n".join(lines) + "\n"


def _check_body(python: str, args: str, settings: JobSettings) -> list[str]:
    """A health check's job: its JSON report kept whatever the verdict (exit 0 healthy, 1 a fault,
    3 inconclusive are all verdicts); the job fails only when no verdict came out."""
    return [
        "# written by `accelbench submit ... check`: one health check on one node, for `accelbench fleet`",
        "set -u",
        f"results={shlex.quote(str(settings.results_dir))}",
        f"check={_job_file(CHECK_PATTERN)}",
        f"status={_job_file(STATUS_PATTERN)}",
        'node="${SLURMD_NODENAME:-$(hostname -s)}"',
        'echo "accelbench check job $SLURM_JOB_ID on $node (partition ${SLURM_JOB_PARTITION:-?}), started $(date -Is)"',
        "check_rc=0",
        f'{python} -m accelbench check {args} --json > "$check.tmp" || check_rc=$?',
        'run_rc=$check_rc',
        'case $check_rc in 0|1|3) if [ -s "$check.tmp" ]; then mv "$check.tmp" "$check" && run_rc=0; fi ;; esac',
        'if [ "$run_rc" -eq 0 ] && [ ! -f "$check" ]; then run_rc=1; fi  # a verdict without its report',
        "printf '{\"job_id\": \"%s\", \"node\": \"%s\", \"partition\": \"%s\", \"cluster\": \"%s\", "
        "\"command\": \"accelbench check\", \"run_exit_code\": %d, \"export_exit_code\": 0, "
        "\"check_exit_code\": %d, \"finished_at\": \"%s\"}\\n' "
        '"$SLURM_JOB_ID" "$node" "${SLURM_JOB_PARTITION:-}" "${SLURM_CLUSTER_NAME:-}" '
        '"$run_rc" "$check_rc" "$(date -Is)" > "$status.tmp" && mv "$status.tmp" "$status"',
        'echo "accelbench check job $SLURM_JOB_ID finished $(date -Is): check exit $check_rc"',
        'exit "$run_rc"',
    ]
