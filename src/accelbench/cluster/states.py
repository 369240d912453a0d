"""Slurm job states: their names, what they mean for a benchmark job, and how to read them.

Slurm answers in three places, tried in this order: `squeue -t all` and `scontrol show job` both
know a job while it is queued or running and for MinJobAge seconds (default 300) after it ends;
after that only the files the job left behind can tell (this cluster layer never needs sacct).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# Slurm's own names (squeue %T, scontrol JobState), grouped by what the caller must do next
ACTIVE_STATES = frozenset({
    "PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD",
    "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD", "POWER_UP_NODE"})
SUCCEEDED_STATES = frozenset({"COMPLETED"})
FAILED_STATES = frozenset({
    "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
    "PREEMPTED", "SPECIAL_EXIT", "REVOKED"})
# ours: sbatch refused the job; nobody (Slurm, files) can say what happened to it
REJECTED, UNKNOWN = "REJECTED", "UNKNOWN"
# ours: `submit --each-node` sent no job to this node (down, drained, ...: Slurm's reason is kept)
NOT_MEASURED = "NOT_MEASURED"

# squeue's compact codes (%t), in case a site's squeue format or an old log shows them
SHORT_CODES = {
    "PD": "PENDING", "CF": "CONFIGURING", "R": "RUNNING", "CG": "COMPLETING", "S": "SUSPENDED",
    "RQ": "REQUEUED", "RH": "REQUEUE_HOLD", "RF": "REQUEUE_FED", "RS": "RESIZING", "SI": "SIGNALING",
    "SO": "STAGE_OUT", "ST": "STOPPED", "RD": "RESV_DEL_HOLD", "CD": "COMPLETED", "F": "FAILED",
    "TO": "TIMEOUT", "CA": "CANCELLED", "NF": "NODE_FAIL", "OOM": "OUT_OF_MEMORY", "BF": "BOOT_FAIL",
    "DL": "DEADLINE", "PR": "PREEMPTED", "SE": "SPECIAL_EXIT", "RV": "REVOKED"}

SQUEUE_FORMAT = "%i|%T|%N|%P|%r"  # job id | state | node list | partition | reason (last: may hold spaces)
_NOT_KNOWN = "Invalid job id specified"  # squeue / scontrol, once a job is past MinJobAge


def normalize_state(text: str) -> str:
    """'CANCELLED by 1000' -> CANCELLED, 'CD' -> COMPLETED, 'RUNNING+' -> RUNNING."""
    word = (text or "").strip().split(" ")[0].rstrip("+*").upper()
    return SHORT_CODES.get(word, word) or UNKNOWN


def category(state: str) -> str:
    """'active' (wait more), 'succeeded', 'failed', or 'unmeasured' (no job: the node was unusable);
    an unheard-of name counts as active, so a new Slurm state costs a bounded wait instead of a job
    wrongly reported as failed."""
    if state == NOT_MEASURED:
        return "unmeasured"
    if state in SUCCEEDED_STATES:
        return "succeeded"
    if state in FAILED_STATES or state in (REJECTED, UNKNOWN):
        return "failed"
    return "active"


@dataclass(frozen=True)
class JobState:
    """What is known about one job, and who said so."""

    job_id: str
    state: str             # Slurm's name (COMPLETED, TIMEOUT, ...), REJECTED or UNKNOWN
    source: str            # squeue, scontrol, files, manifest, sbatch
    reason: str = ""       # Slurm's Reason (Priority, NonZeroExitCode, ...) or ours
    exit_code: str = ""    # Slurm's "status:signal", e.g. "2:0"
    node: str = ""
    partition: str = ""

    @property
    def category(self) -> str:
        return category(self.state)

    @property
    def terminal(self) -> bool:
        return self.category != "active"

    def describe(self) -> str:
        """'FAILED (exit 2:0, NonZeroExitCode; from scontrol)'."""
        details = []
        if self.exit_code and self.exit_code != "0:0":
            details.append(f"exit {self.exit_code}")
        if self.reason:  # Slurm's "None" and "(null)" are read as no reason where its output is parsed
            details.append(self.reason)
        told = f"from {self.source}"
        return f"{self.state} ({', '.join(details)}; {told})" if details else f"{self.state} ({told})"

    def to_dict(self) -> dict[str, str]:
        return {"state": self.state, "source": self.source, "reason": self.reason,
                "exit_code": self.exit_code, "node": self.node, "partition": self.partition}

    @classmethod
    def from_dict(cls, job_id: str, data: dict) -> "JobState":
        return cls(job_id=job_id, state=normalize_state(str(data.get("state", UNKNOWN))),
                   source=str(data.get("source", "manifest")), reason=_null(str(data.get("reason", ""))),
                   exit_code=str(data.get("exit_code", "")), node=str(data.get("node", "")),
                   partition=str(data.get("partition", "")))


def unknown_job_message(text: str) -> bool:
    """True when squeue/scontrol said the job id is not (or no longer) known."""
    return _NOT_KNOWN.lower() in (text or "").lower()


def parse_squeue(text: str) -> dict[str, JobState]:
    """Lines of `squeue -h -t all -o '%i|%T|%N|%P|%r'` -> job id -> state."""
    found = {}
    for line in (text or "").splitlines():
        parts = line.strip().split("|", 4)
        if len(parts) < 2 or not parts[0]:
            continue
        job_id, state = parts[0], normalize_state(parts[1])
        node, partition, reason = (parts + ["", "", ""])[2:5]
        found[job_id] = JobState(job_id, state, "squeue", reason=_null(reason.strip()), node=node.strip(),
                                 partition=partition.strip())
    return found


_KEY = re.compile(r"^[A-Za-z][A-Za-z0-9_:/]*=")


def parse_scontrol_fields(line: str) -> dict[str, str]:
    """One record of `scontrol show job -o` ('JobId=12 JobName=x ... Command=/a b') -> fields.

    A token that does not start with `Key=` belongs to the previous value (values may hold
    spaces: a work dir, a command); `TRES=cpu=1,mem=2G` splits at its first `=` only.
    """
    fields: dict[str, str] = {}
    key = None
    for token in line.split():
        if _KEY.match(token):
            key, _, value = token.partition("=")
            fields[key] = value
        elif key is not None:
            fields[key] += " " + token
    return fields


def parse_scontrol(text: str) -> dict[str, JobState]:
    """Records of `scontrol show job -o` (one per line) -> job id -> state."""
    found = {}
    for line in (text or "").splitlines():
        fields = parse_scontrol_fields(line)
        job_id = fields.get("JobId")
        if not job_id or "JobState" not in fields:
            continue
        found[job_id] = JobState(
            job_id, normalize_state(fields["JobState"]), "scontrol",
            reason=_null(fields.get("Reason", "")), exit_code=fields.get("ExitCode", ""),
            node=_null(fields.get("NodeList", "")), partition=_null(fields.get("Partition", "")))
    return found


def _null(value: str) -> str:
    return "" if value in ("(null)", "None") else value


# slurmstepd's last words in a job's stderr, most specific first
_LOG_PATTERNS = (
    (re.compile(r"\*\*\* JOB \S+ ON \S+ CANCELLED AT \S+ DUE TO TIME LIMIT"), "TIMEOUT"),
    (re.compile(r"\*\*\* JOB \S+ ON \S+ CANCELLED AT \S+ DUE TO PREEMPTION"), "PREEMPTED"),
    (re.compile(r"\*\*\* JOB \S+ ON \S+ CANCELLED AT \S+ DUE TO NODE FAIL"), "NODE_FAIL"),
    # "Detected 1 oom-kill event(s) in StepId=..." (older) / "Detected 2 oom_kill events" (newer)
    (re.compile(r"Detected \d+ oom[-_]kill event"), "OUT_OF_MEMORY"),
    (re.compile(r"\*\*\* JOB \S+ ON \S+ CANCELLED AT"), "CANCELLED"),
)


def state_from_log(text: str) -> str | None:
    """The state slurmstepd wrote into a job's log when it ended the job, or None."""
    for pattern, state in _LOG_PATTERNS:
        if pattern.search(text or ""):
            return state
    return None


def state_from_status(job_id: str, status: dict) -> JobState:
    """A state from the status file the batch script writes as its last act (see script.py)."""
    run_rc, export_rc = status.get("run_exit_code"), status.get("export_exit_code")
    ok = run_rc == 0 and export_rc == 0
    failed_step = str(status.get("command") or "accelbench run") if run_rc != 0 else "accelbench export"
    code = run_rc if run_rc != 0 else export_rc
    return JobState(job_id, "COMPLETED" if ok else "FAILED", "files",
                    reason="" if ok else f"{failed_step} exited {code}",
                    exit_code=f"{code}:0", node=str(status.get("node", "")),
                    partition=str(status.get("partition", "")))
