"""Talking to Slurm through its commands: sbatch, squeue, scontrol. Every call has a timeout.

A `Runner` (argv -> CompletedProcess) is passed in everywhere, so tests can replay recorded
outputs; `run_command` is the real one.
"""
from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from accelbench.cluster.states import (SQUEUE_FORMAT, JobState, parse_scontrol, parse_squeue,
                                       unknown_job_message)
from accelbench.errors import UsageError

Runner = Callable[[list[str]], subprocess.CompletedProcess]
COMMAND_TIMEOUT_S = 60.0  # a busy slurmctld can take seconds to answer; a dead one, forever
SCONTROL_BATCH = 50       # job ids per scontrol call (it takes one id at a time; keep polls bounded)


class SlurmUnavailable(UsageError):
    """A Slurm command is missing, timed out, or cannot reach slurmctld."""


def run_command(argv: list[str], timeout_s: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s, check=False)
    except FileNotFoundError:
        raise SlurmUnavailable(f"{argv[0]} not found: is Slurm installed here, and on PATH? "
                               f"(`accelbench submit` runs on a cluster's login node)") from None
    except subprocess.TimeoutExpired:
        raise SlurmUnavailable(f"`{' '.join(argv[:3])} ...` gave no answer in {timeout_s:.0f} s: "
                               f"slurmctld is busy or unreachable; try again later") from None


def _message(result: subprocess.CompletedProcess) -> str:
    return ((result.stderr or "").strip() or (result.stdout or "").strip()
            or f"exit status {result.returncode}, no message")


@dataclass(frozen=True)
class Submitted:
    job_id: str | None   # None: sbatch refused the job
    message: str         # sbatch's message (its refusal, or warnings printed with an accepted job)


def parse_parsable(stdout: str) -> str | None:
    """`sbatch --parsable` prints 'JOBID' or 'JOBID;CLUSTER' (after any warnings)."""
    for line in reversed((stdout or "").strip().splitlines()):
        job_id = line.strip().split(";")[0]
        if job_id.isdigit():
            return job_id
    return None


def submit(script: Path, runner: Runner = run_command) -> Submitted:
    """Hand one batch script to sbatch; its #SBATCH lines carry every option."""
    result = runner(["sbatch", "--parsable", str(script)])
    job_id = parse_parsable(result.stdout) if result.returncode == 0 else None
    if job_id is None:
        return Submitted(None, _message(result))
    return Submitted(job_id, (result.stderr or "").strip())


def expand_nodelist(text: str | None, runner: Runner = run_command) -> list[str]:
    """'gpu[01-03],cpu7' -> node names; brackets are Slurm hostlists, which scontrol expands."""
    if not text:
        return []
    if "[" not in text:
        return [part.strip() for part in text.split(",") if part.strip()]
    result = runner(["scontrol", "show", "hostnames", text])
    if result.returncode != 0:
        raise UsageError(f"--nodelist {text!r}: scontrol could not expand it: {_message(result)}")
    return [line.strip() for line in result.stdout.splitlines() if line.strip()]


def _squeue(job_ids: list[str], runner: Runner) -> dict[str, JobState]:
    result = runner(["squeue", "-h", "-t", "all", "-o", SQUEUE_FORMAT, "-j", ",".join(job_ids)])
    if result.returncode != 0:
        if unknown_job_message(result.stderr):  # every id asked for is past MinJobAge
            return {}
        raise SlurmUnavailable(f"squeue failed: {_message(result)}")
    return {k: v for k, v in parse_squeue(result.stdout).items() if k in job_ids}


def _scontrol(job_id: str, runner: Runner) -> JobState | None:
    result = runner(["scontrol", "show", "job", "-o", job_id])
    if result.returncode != 0:
        if unknown_job_message(result.stderr) or unknown_job_message(result.stdout):
            return None
        raise SlurmUnavailable(f"scontrol show job {job_id} failed: {_message(result)}")
    return parse_scontrol(result.stdout).get(job_id)


def query(job_ids: Iterable[str], runner: Runner = run_command) -> dict[str, JobState]:
    """What Slurm knows now about each job; a job it no longer knows is absent from the answer.

    squeue answers for every job in one call; scontrol is then asked about the jobs that ended
    (for their exit code) and about any squeue left out.
    """
    ids = list(dict.fromkeys(j for j in job_ids if j))
    if not ids:
        return {}
    states = _squeue(ids, runner)
    ask = [j for j in ids if j not in states or states[j].terminal][:SCONTROL_BATCH]
    for job_id in ask:
        detailed = _scontrol(job_id, runner)
        if detailed is not None:
            states[job_id] = detailed
    return states


def wait(job_ids: Iterable[str], *, timeout_s: float, poll_s: float = 5.0,
         runner: Runner = run_command, on_change: Callable[[JobState], None] | None = None,
         on_poll: Callable[[dict[str, JobState], set[str]], None] | None = None,
         clock: Callable[[], float] = time.monotonic,
         sleep: Callable[[float], None] = time.sleep) -> tuple[dict[str, JobState], bool]:
    """Poll until every job has ended or left Slurm's memory, or `timeout_s` has passed.

    Returns (last states seen, finished). A job Slurm no longer knows counts as ended: its files
    tell the rest. `on_change` hears each new state once.
    """
    pending = list(dict.fromkeys(j for j in job_ids if j))
    seen: dict[str, JobState] = {}
    deadline = clock() + max(0.0, timeout_s)
    while True:
        states = query(pending, runner)
        for job_id, state in states.items():
            if on_change and (job_id not in seen or seen[job_id].state != state.state):
                on_change(state)
            seen[job_id] = state
        pending = [j for j in pending if j in states and not states[j].terminal]
        if on_poll:
            on_poll(seen, set(pending))
        if not pending:
            return seen, True
        left_s = deadline - clock()
        if left_s <= 0:
            return seen, False
        sleep(min(poll_s, left_s))
