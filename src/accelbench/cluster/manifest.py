"""The job manifest: one JSON file in the results folder listing every job submitted there.

`accelbench gather` starts from it, so a job is never forgotten because Slurm forgot it. Several
submissions may share one folder (and run at once, from several login nodes): each update takes
an exclusive lock on a side file, re-reads the manifest, changes it and renames a new copy over
it, so readers never see half a file. Paths inside are relative to the results folder, which
can therefore be moved or copied as a whole.

Layout of a results folder (the job id fills in J):
    manifest.json            this file
    scripts/<submission>-<n>.sbatch   the batch script each job was submitted with
    logs/J.out, logs/J.err   the job's stdout and stderr
    jobs/J.json              `accelbench export` of the job's run (the results)
    jobs/J.status.json       exit codes, node, partition: written by the job as its last act
    jobs/J.check.json        `accelbench check --json` of a check job (`submit --each-node check`)
"""
from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from accelbench.cluster.states import JobState
from accelbench.cluster.targets import Target
from accelbench.errors import UsageError

MANIFEST_NAME = "manifest.json"
FORMAT_NAME = "accelbench-cluster-manifest"
FORMAT_VERSION = 1
LOCK_NAME = ".manifest.lock"

# the batch script writes these with the job id in place of {job_id}: keep both sides in step
STDOUT_PATTERN = "logs/{job_id}.out"
STDERR_PATTERN = "logs/{job_id}.err"
RESULT_PATTERN = "jobs/{job_id}.json"
STATUS_PATTERN = "jobs/{job_id}.status.json"
CHECK_PATTERN = "jobs/{job_id}.check.json"
RUN, CHECK = "run", "check"   # what a job runs: a benchmark (`accelbench run`) or a health check
# a Slurm job id: digits, or digits_digits for one task of a job array; it names files, so nothing else
JOB_ID = re.compile(r"[0-9]+(_[0-9]+)?")


class OutsideResults(UsageError):
    """A job's file would be read from outside its results folder (a `..`, or a symlink leading out)."""


def check_job_id(job_id: object, where: str) -> str:
    text = str(job_id)
    if not JOB_ID.fullmatch(text):
        raise UsageError(f"{where}: job id {text[:80]!r} is not a Slurm job id; accepted: digits, "
                         f"optionally _ and an array index (e.g. 1234 or 1234_5)")
    return text


def inside(results_dir: Path, path: Path) -> Path:
    """`path` when it (symlinks followed) lies inside `results_dir`, else OutsideResults."""
    folder, target = Path(results_dir).resolve(), Path(path).resolve()
    if target != folder and folder not in target.parents:
        raise OutsideResults(f"{path} leads outside the results folder {folder} (to {target}): not read")
    return path


@dataclass(frozen=True)
class JobRecord:
    """One submitted (or refused) job as the manifest keeps it."""

    submission: str                  # the `accelbench submit` call it came from
    index: int                       # 1.. within that submission
    target: Target
    script: str                      # relative to the results folder
    submitted_at: str
    command: tuple[str, ...]         # the `accelbench run` arguments the job runs
    job_id: str | None = None        # None when sbatch refused the job
    rejected: str | None = None      # sbatch's message then
    last_state: dict[str, str] = field(default_factory=dict)  # last JobState seen, for after Slurm forgets
    node_info: dict[str, str] = field(default_factory=dict)   # --each-node: the node's features, gres, state
    unmeasured: str | None = None    # --each-node: why no job was sent to this node (down, drained: Slurm's reason)
    kind: str = RUN                  # RUN (results to import) or CHECK (a health report, jobs/J.check.json)

    def path(self, results_dir: Path, pattern: str) -> Path:
        """A file of this job in the results folder; refused (UsageError) anywhere else."""
        job_id = check_job_id(self.job_id, f"job #{self.index} of submission {self.submission}")
        return inside(results_dir, Path(results_dir) / pattern.format(job_id=job_id))

    @property
    def key(self) -> tuple[str, int]:
        return (self.submission, self.index)

    def to_dict(self) -> dict[str, Any]:
        return {"submission": self.submission, "index": self.index, "job_id": self.job_id,
                "target": self.target.to_dict(), "script": self.script,
                "submitted_at": self.submitted_at, "command": list(self.command),
                "rejected": self.rejected, "last_state": dict(self.last_state),
                "node_info": dict(self.node_info), "unmeasured": self.unmeasured, "kind": self.kind}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str) -> "JobRecord":
        job_id = data.get("job_id") if isinstance(data, Mapping) else None
        if job_id is not None:  # before any path is built from it
            check_job_id(job_id, f"{where}.job_id")
        try:
            return cls(submission=str(data["submission"]), index=int(data["index"]),
                       target=Target.from_dict(dict(data.get("target") or {})),
                       script=str(data.get("script", "")), submitted_at=str(data.get("submitted_at", "")),
                       command=tuple(str(a) for a in data.get("command") or ()),
                       job_id=None if job_id is None else str(job_id),
                       rejected=None if data.get("rejected") is None else str(data["rejected"]),
                       last_state={str(k): str(v) for k, v in (data.get("last_state") or {}).items()},
                       node_info={str(k): str(v) for k, v in (data.get("node_info") or {}).items()},
                       unmeasured=None if data.get("unmeasured") is None else str(data["unmeasured"]),
                       kind=CHECK if data.get("kind") == CHECK else RUN)  # older manifests: benchmarks
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise UsageError(f"{where}: not a job record ({exc!r}); accepted: a manifest written "
                             f"by `accelbench submit`") from None


def manifest_path(results_dir: str | Path) -> Path:
    return Path(results_dir) / MANIFEST_NAME


def load_manifest(results_dir: str | Path) -> list[JobRecord]:
    """The jobs recorded in a results folder, in submission order; [] when it has no manifest."""
    from accelbench.safe_write import read_regular

    path = manifest_path(results_dir)
    if not path.exists():
        return []
    try:
        data = json.loads(read_regular(path).decode("utf-8"))  # a FIFO there would block for ever
    except OSError as exc:
        raise UsageError(f"cannot read job manifest {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError(f"cannot read job manifest {path}: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT_NAME:
        raise UsageError(f"{path}: not an accelbench job manifest (format {FORMAT_NAME!r} expected)")
    if data.get("format_version") != FORMAT_VERSION:
        raise UsageError(f"{path}: manifest version {data.get('format_version')!r}; this accelbench "
                         f"reads version {FORMAT_VERSION}")
    jobs = data.get("jobs")
    if not isinstance(jobs, list):
        raise UsageError(f"{path}: 'jobs' must be a list")
    return [JobRecord.from_dict(job, f"{path}: jobs[{i}]") if isinstance(job, dict)
            else JobRecord.from_dict({}, f"{path}: jobs[{i}]") for i, job in enumerate(jobs)]


@contextmanager
def _locked(results_dir: Path) -> Iterator[None]:
    path = results_dir / LOCK_NAME
    try:
        results_dir.mkdir(parents=True, exist_ok=True)
        # never through a planted link, never blocking on a planted FIFO: a regular file or nothing
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o666)
    except OSError as exc:
        why = "it is a symbolic link" if exc.errno == errno.ELOOP else exc.strerror or exc
        raise UsageError(f"cannot lock the job manifest with {path}: {why}; accepted: a "
                         f"results folder this user may write in, where {LOCK_NAME} is a regular file") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UsageError(f"cannot lock the job manifest with {path}: it is not a regular file; "
                             f"remove it (accelbench makes it again)")
        if sys.platform != "win32":  # Windows: gathering a copied folder there needs no lock against sbatch users
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)  # released when the file closes
        yield
    finally:
        os.close(fd)


def _write(results_dir: Path, records: list[JobRecord]) -> None:
    from accelbench.store.export import write_json

    write_json(manifest_path(results_dir), {"format": FORMAT_NAME, "format_version": FORMAT_VERSION,
                                            "jobs": [r.to_dict() for r in records]})


def check_lock(results_dir: str | Path) -> None:
    """UsageError now, before any job is handed to sbatch, if the manifest could not be locked later."""
    with _locked(Path(results_dir)):
        pass


def add_jobs(results_dir: str | Path, new: list[JobRecord]) -> None:
    """Append records (one submission's jobs) to the manifest, creating it if needed."""
    folder = Path(results_dir)
    with _locked(folder):
        _write(folder, load_manifest(folder) + list(new))


def record_states(results_dir: str | Path, states: Mapping[str, JobState]) -> None:
    """Remember the latest state Slurm gave for each job id, for when Slurm no longer knows it.

    Only states Slurm itself reported are kept; an inference from files would only repeat what
    the files already say."""
    folder = Path(results_dir)
    with _locked(folder):
        records = load_manifest(folder)
        changed = False
        for i, record in enumerate(records):
            state = states.get(record.job_id or "")
            if state is not None and state.source in ("squeue", "scontrol"):
                new = state.to_dict()
                if new != record.last_state:
                    records[i], changed = replace(record, last_state=new), True
        if changed:
            _write(folder, records)


def remember_states(results_dir: str | Path, states: Mapping[str, JobState]) -> str:
    """record_states, where a failure (a read-only copy of the folder, a full disk) costs only the
    memory of those states: "" when remembered, else a sentence saying why not, for the command
    to print, never to drop."""
    try:
        record_states(results_dir, states)
    except (UsageError, OSError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return f"the job manifest in {results_dir} does not remember Slurm's states ({why})"
    return ""
