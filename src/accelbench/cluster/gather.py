"""Gathering: what became of each job in a manifest, and its results into the local database.

Nothing is dropped silently: every job in the manifest ends up in exactly one outcome, with its
state, who said so, and (when it did not succeed) the tail of its logs. A results file is
imported whatever the job's state (a job killed after a partial run still measured something),
validated first; importing the same file again adds nothing.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from accelbench.cluster.manifest import (RESULT_PATTERN, RUN, STATUS_PATTERN, STDERR_PATTERN,
                                         STDOUT_PATTERN, JobRecord, OutsideResults, load_manifest,
                                         remember_states)
from accelbench.cluster.slurm import Runner, query, run_command
from accelbench.cluster.states import (NOT_MEASURED, REJECTED, UNKNOWN, JobState, state_from_log,
                                       state_from_status)
from accelbench.errors import UsageError

LOG_TAIL_LINES = 12
_LOG_READ_BYTES = 64 * 1024  # the end of a long log is where a job's last words are


@dataclass
class JobOutcome:
    record: JobRecord
    state: JobState
    imported: list[str] = field(default_factory=list)   # run ids added to the database now
    present: list[str] = field(default_factory=list)    # run ids that were already there
    problem: str = ""                                    # e.g. "no results file", "invalid: ..."
    log_tail: list[str] = field(default_factory=list)   # "path: line" entries, when it failed

    @property
    def status(self) -> str:
        """'ok' (succeeded, results imported), 'active' (wait), 'failed', or 'unmeasured' (no job:
        --each-node found the node down or drained)."""
        if self.state.category in ("active", "unmeasured"):
            return self.state.category
        ok = self.state.category == "succeeded" and not self.problem and (self.imported or self.present)
        return "ok" if ok else "failed"


def tail_lines(path: Path, lines: int = LOG_TAIL_LINES) -> list[str]:
    if not path.is_file():  # absent, or a FIFO or device planted in the folder: never block on it
        return []
    try:
        with open(path, "rb") as handle:
            handle.seek(0, 2)
            size = handle.tell()
            handle.seek(max(0, size - _LOG_READ_BYTES))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    return [line.rstrip() for line in text.splitlines() if line.strip()][-lines:]


def _read_status(path: Path) -> dict | None:
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None  # absent, or cut short by the job's death: the log has to tell instead
    return data if isinstance(data, dict) else None


def state_from_files(record: JobRecord, results_dir: Path, slurm_asked: bool = True) -> JobState:
    """For a job Slurm no longer knows (or could not be asked about): its status file, else the
    last state Slurm gave (kept in the manifest), else slurmstepd's words in its log, else
    UNKNOWN with why."""
    job_id = record.job_id or ""
    status = _read_status(record.path(results_dir, STATUS_PATTERN))
    if status is not None:
        return state_from_status(job_id, status)
    if record.last_state:
        remembered = JobState.from_dict(job_id, record.last_state)
        if remembered.terminal:
            return replace(remembered, source="manifest")
    stderr = record.path(results_dir, STDERR_PATTERN)
    logged = state_from_log("\n".join(tail_lines(stderr, 200)))
    if logged:
        return JobState(job_id, logged, "files", reason=f"slurmstepd's message in {stderr.name}")
    has_log = stderr.exists() or record.path(results_dir, STDOUT_PATTERN).exists()
    why = ("it started (it has a log) but wrote no status file: killed before it finished?"
           if has_log else "it left no log here: never started, or its log is on another filesystem")
    slurm = "Slurm no longer knows this job" if slurm_asked else "Slurm could not be asked"
    return JobState(job_id, UNKNOWN, "files", reason=f"{slurm}; {why}")


def _tags(record: JobRecord, state: JobState, status: dict | None) -> dict[str, str]:
    status = status or {}
    info = record.node_info
    tags = {"job_id": record.job_id or "",
            "node": str(status.get("node") or state.node or record.target.node or ""),
            "partition": str(status.get("partition") or state.partition or record.target.partition or ""),
            "cluster": str(status.get("cluster") or ""),
            "gres": record.target.gres or "", "constraint": record.target.constraint or "",
            "node_features": info.get("features", ""), "node_gres": info.get("gres", ""),
            "submission": record.submission}
    return {key: value for key, value in tags.items() if value}


@dataclass
class _Pending:
    """One job's results file, read and validated, waiting for the batch's single transaction."""

    outcome: JobOutcome
    run_ids: list[str]
    rows: list[dict]


def _stored_already(document, store) -> list[str] | None:
    """The run ids of a parsed document when every one is already in the store (gathering again:
    nothing to validate or build), else None."""
    runs = document.get("runs") if isinstance(document, dict) else None
    if not isinstance(runs, list) or not runs:
        return None
    ids = [str(run["id"]) for run in runs if isinstance(run, dict) and isinstance(run.get("id"), str)]
    if len(ids) != len(runs):
        return None
    connection = store._connection()  # a read-only look beside the Store's own queries
    stored = all(connection.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() for run_id in ids)
    return ids if stored else None


def _read_results(outcome: JobOutcome, results_dir: Path, store) -> _Pending | None:
    """Read and validate a job's results file (nothing is written yet); None when there is none
    to import, with the problem noted on the outcome."""
    from accelbench.store.document_schema import validate_document
    from accelbench.store.import_file import parse_json, read_bytes, run_records, stored_phases

    record = outcome.record
    path = record.path(results_dir, RESULT_PATTERN)
    if not path.is_file():
        if outcome.state.category != "active":
            outcome.problem = f"no results file {path}"
        return None
    status = _read_status(record.path(results_dir, STATUS_PATTERN))
    try:
        raw = read_bytes(path)
        document = parse_json(raw, path)
        present = _stored_already(document, store)
        if present is not None:
            outcome.present = present
            return None
        try:
            validate_document(document)
        except UsageError as exc:
            raise UsageError(f"{path}: {exc}") from None
    except UsageError as exc:
        outcome.problem = f"results not imported: {exc}"
        return None
    if not document["runs"]:
        outcome.problem = f"{path} holds no runs"
        return None
    tags = _tags(record, outcome.state, status)
    rows = list(run_records(document["runs"], tags, stored_phases(raw, document)))
    return _Pending(outcome, [run["id"] for run in document["runs"]], rows)


def _import_all(pending: list[_Pending], store) -> None:
    """Every job's runs into the database in ONE transaction (hundreds of nodes: one commit, not
    hundreds); a run id already stored, or met twice, counts as present. Should the batch's data
    be refused (validation let through something the database will not take), each job's runs
    are stored on their own, so one bad file costs only its job; a database that cannot be
    written at all (full, locked) stops the gather as before."""
    import sqlite3

    refused = (ValueError, sqlite3.IntegrityError)
    try:
        added = set(store.restore_runs(row for item in pending for row in item.rows))
    except refused:
        added = set()
        for item in pending:
            try:
                added.update(store.restore_runs(item.rows))
            except refused as exc:
                item.outcome.problem = f"results not imported: the database refused them: {exc}"
                item.run_ids = []
    for item in pending:
        item.outcome.imported = [run_id for run_id in item.run_ids if run_id in added]
        added.difference_update(item.outcome.imported)  # a run in two files is new only once
        item.outcome.present = [run_id for run_id in item.run_ids if run_id not in item.outcome.imported]


def _log_tail(record: JobRecord, results_dir: Path) -> list[str]:
    tail = []
    for pattern in (STDERR_PATTERN, STDOUT_PATTERN):
        path = record.path(results_dir, pattern)
        tail += [f"{path.name}: {line}" for line in tail_lines(path)]
    return tail or ["(no log lines: the job left no output here)"]


def _outcome(record: JobRecord, results_dir: Path, known: Mapping[str, JobState], store,
             slurm_asked: bool) -> tuple[JobOutcome, _Pending | None]:
    if record.job_id is None and record.unmeasured:
        state = JobState("", NOT_MEASURED, "scontrol", reason=record.unmeasured,
                         node=record.target.node or "")
        return JobOutcome(record, state), None
    if record.job_id is None:
        state = JobState("", REJECTED, "sbatch", reason=record.rejected or "refused by sbatch")
        return JobOutcome(record, state, problem=state.reason), None
    try:
        state = known.get(record.job_id) or state_from_files(record, results_dir, slurm_asked)
        outcome = JobOutcome(record, state)
        return outcome, _read_results(outcome, results_dir, store)
    except OutsideResults as exc:  # one planted symlink costs that job, not the whole gather
        state = known.get(record.job_id) or JobState(record.job_id, UNKNOWN, "files", reason=str(exc))
        return JobOutcome(record, state, problem=f"refused: {exc}"), None


def outcomes_for(records: list[JobRecord], results_dir: Path, known: Mapping[str, JobState], store,
                 slurm_asked: bool = True) -> list[JobOutcome]:
    """Each record's outcome, its results imported (all files in one transaction)."""
    from accelbench.bulk import frozen_heap

    with frozen_heap(collect=False):  # parsing and row building make many objects and no cycles
        pairs = [_outcome(r, results_dir, known, store, slurm_asked) for r in records]
        _import_all([item for _, item in pairs if item is not None], store)
    for outcome, _ in pairs:
        if outcome.status == "failed" and outcome.record.job_id and not outcome.problem.startswith("refused:"):
            outcome.log_tail = _log_tail(outcome.record, results_dir)
    return [outcome for outcome, _ in pairs]


def outcome_for(record: JobRecord, results_dir: Path, known: Mapping[str, JobState], store,
                slurm_asked: bool = True) -> JobOutcome:
    return outcomes_for([record], results_dir, known, store, slurm_asked)[0]


@dataclass
class GatherReport:
    outcomes: list[JobOutcome]
    slurm_error: str = ""  # why Slurm could not be asked (the files decided instead)
    unremembered: str = ""  # why the manifest could not be updated: said, never silently dropped

    def count(self, status: str) -> int:
        return sum(1 for o in self.outcomes if o.status == status)


def select(records: list[JobRecord], submission: str | None) -> list[JobRecord]:
    """The records of one submission ('latest' = the last one made), or all of them."""
    if not submission:
        return records
    wanted = records[-1].submission if submission == "latest" and records else submission
    chosen = [r for r in records if r.submission == wanted]
    if not chosen:
        known = ", ".join(dict.fromkeys(r.submission for r in records)) or "none"
        raise UsageError(f"--submission {submission!r}: no such submission in the manifest "
                         f"(submissions: {known})")
    return chosen


def gather(results_dir: str | Path, store, runner: Runner = run_command,
           known: Mapping[str, JobState] | None = None,
           records: list[JobRecord] | None = None) -> GatherReport:
    """One outcome per job recorded in `results_dir` (or per given record), in manifest order.

    `known`: states already asked of Slurm (by a wait); otherwise Slurm is asked here, and when
    its commands are absent (gathering on a laptop after copying the folder) the files decide.
    """
    folder = Path(results_dir)
    records = load_manifest(folder) if records is None else records
    records = [r for r in records if r.kind == RUN]  # check jobs leave verdicts, not results: check_sweep
    slurm_error = ""
    if known is None:
        try:
            known = query([r.job_id for r in records if r.job_id], runner)
        except UsageError as exc:  # no Slurm reachable from here
            known, slurm_error = {}, str(exc)
    unremembered = remember_states(folder, known) if known else ""  # its failure costs no results
    outcomes = outcomes_for(records, folder, known, store, slurm_asked=not slurm_error)
    return GatherReport(outcomes, slurm_error, unremembered)
