"""A health-check sweep of a partition (`accelbench submit --each-node check`): each node's verdict
and the checks behind it, in one table.

Each check job leaves `accelbench check --json` in jobs/J.check.json (cluster/script.py). Nothing is
imported into a database: a check is a verdict on a node, not a benchmark result. Every job of the
sweep ends as exactly one row: the check's verdict (PASS, WARN, FAIL, INCONCLUSIVE), or JOB FAILED
(no report: the check could not run; its log's last lines say why), PENDING, or NOT MEASURED (the
node was down or drained: Slurm's reason).

Exit status, as `accelbench check`'s own: 1 a node FAIL or a job failed, 3 none of those but a node
INCONCLUSIVE or still pending, 0 every node PASS or WARN.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelbench.cluster.manifest import CHECK, CHECK_PATTERN, STDERR_PATTERN, STDOUT_PATTERN, JobRecord, OutsideResults
from accelbench.cluster.states import REJECTED, JobState
from accelbench.health.model import FAIL, INCONCLUSIVE, PASS, STATUSES, WARN

JOB_FAILED, PENDING, UNMEASURED = "JOB FAILED", "PENDING", "NOT MEASURED"
NOTED = (FAIL, INCONCLUSIVE, WARN)   # findings a row names, worst first
MAX_REPORT_BYTES = 4 * 2**20         # a check report is a few kB; a larger file is not one
EXIT_FAULT, EXIT_INCONCLUSIVE = 1, 3


@dataclass(frozen=True)
class NodeCheck:
    """One node's row of the sweep."""

    node: str
    node_type: str
    verdict: str                              # PASS WARN FAIL INCONCLUSIVE, or JOB FAILED, PENDING, NOT MEASURED
    problems: tuple[dict[str, str], ...] = ()  # the FAIL / INCONCLUSIVE / WARN findings: check, status, summary
    detail: str = ""                          # Slurm's state, why no report, why not measured
    job_id: str = ""
    elapsed_s: float | None = None            # the check's own duration
    log_tail: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "node_type": self.node_type, "verdict": self.verdict,
                "failing_checks": [p["check"] for p in self.problems if p["status"] == FAIL],
                "problems": [dict(p) for p in self.problems], "detail": self.detail, "job_id": self.job_id,
                "elapsed_s": self.elapsed_s, "log_tail": list(self.log_tail)}


def read_report(path: Path) -> dict[str, Any]:
    """A check report's verdict and findings, checked for shape; ValueError saying what is wrong."""
    if not path.is_file():
        raise ValueError(f"no check report {path.name}")
    if path.stat().st_size > MAX_REPORT_BYTES:
        raise ValueError(f"{path.name} is {path.stat().st_size} bytes: not a check report")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path.name} is not readable JSON ({exc})") from None
    findings = data.get("findings") if isinstance(data, dict) else None
    if not isinstance(findings, list) or not all(isinstance(f, dict) and f.get("status") in STATUSES
                                                 for f in findings):
        raise ValueError(f"{path.name} is not an `accelbench check --json` report")
    return data


def verdict_of(findings: list[dict]) -> str:
    """The report's verdict from its findings (as health.model.overall), not from its own word."""
    statuses = {f["status"] for f in findings}
    return next((s for s in (FAIL, INCONCLUSIVE, WARN) if s in statuses), PASS)


def _problems(findings: list[dict]) -> tuple[dict[str, str], ...]:
    chosen = [f for f in findings if f["status"] in NOTED]
    chosen.sort(key=lambda f: NOTED.index(f["status"]))
    return tuple({"check": str(f.get("check", "?")), "status": f["status"], "summary": str(f.get("summary", ""))}
                 for f in chosen)


def _log_tail(record: JobRecord, results_dir: Path) -> tuple[str, ...]:
    from accelbench.cluster.gather import tail_lines

    tail = []
    for pattern in (STDERR_PATTERN, STDOUT_PATTERN):
        path = record.path(results_dir, pattern)
        tail += [f"{path.name}: {line}" for line in tail_lines(path, 6)]
    return tuple(tail) or ("(no log lines: the job left no output here)",)


def node_check(record: JobRecord, results_dir: Path, known: Mapping[str, JobState], slurm_asked: bool) -> NodeCheck:
    """One job's row: its report's verdict where it left one, else what Slurm or the files say."""
    from accelbench.cluster.gather import state_from_files

    node_type = record.node_info.get("features", "") or "-"
    node = record.target.node or f"job {record.job_id or record.index}"
    if record.job_id is None:
        why = record.unmeasured or record.rejected or "refused by sbatch"
        return NodeCheck(node, node_type, UNMEASURED if record.unmeasured else JOB_FAILED,
                         detail=why if record.unmeasured else f"{REJECTED}: {why}")
    try:
        state = known.get(record.job_id) or state_from_files(record, results_dir, slurm_asked)
        report = read_report(record.path(results_dir, CHECK_PATTERN))
    except OutsideResults as exc:
        return NodeCheck(node, node_type, JOB_FAILED, detail=f"refused: {exc}", job_id=record.job_id)
    except ValueError as exc:
        if state.category == "active":
            return NodeCheck(node, node_type, PENDING, detail=state.describe(), job_id=record.job_id)
        return NodeCheck(node, node_type, JOB_FAILED, detail=f"{state.describe()}; {exc}", job_id=record.job_id,
                         log_tail=_log_tail(record, results_dir))
    findings = report["findings"]
    elapsed = report.get("elapsed_s")
    return NodeCheck(state.node or node, node_type, verdict_of(findings), _problems(findings),
                     detail=f"{len(findings)} checks on {report.get('host', '?')}", job_id=record.job_id,
                     elapsed_s=float(elapsed) if isinstance(elapsed, (int, float)) else None)


def sweep(results_dir: Path, records: list[JobRecord], known: Mapping[str, JobState] | None = None,
          runner=None) -> tuple[list[NodeCheck], str, str]:
    """(one row per check job of `records`, why Slurm could not be asked or "", why the manifest
    does not remember Slurm's states or "")."""
    from accelbench.cluster.manifest import remember_states
    from accelbench.cluster.slurm import query, run_command
    from accelbench.errors import UsageError

    records = [r for r in records if r.kind == CHECK]
    slurm_error = ""
    if known is None:
        try:
            known = query([r.job_id for r in records if r.job_id], runner or run_command)
        except UsageError as exc:  # gathering a copied folder where Slurm is not
            known, slurm_error = {}, str(exc)
    unremembered = remember_states(results_dir, known) if known else ""  # the table still comes from the files
    return [node_check(r, results_dir, known, not slurm_error) for r in records], slurm_error, unremembered


def exit_code(rows: list[NodeCheck]) -> int:
    verdicts = {row.verdict for row in rows}
    if verdicts & {FAIL, JOB_FAILED}:
        return EXIT_FAULT
    return EXIT_INCONCLUSIVE if verdicts & {INCONCLUSIVE, PENDING} else 0


def to_dict(rows: list[NodeCheck], submission: str) -> dict[str, Any]:
    return {"submission": submission, "exit_code": exit_code(rows), "nodes": [row.to_dict() for row in rows],
            "faulty_nodes": [row.node for row in rows if row.verdict in (FAIL, JOB_FAILED)]}


ORDER = (FAIL, JOB_FAILED, INCONCLUSIVE, PENDING, UNMEASURED, WARN, PASS)


def render(rows: list[NodeCheck], submission: str, out, width: int = 100) -> None:
    """The sweep as a table: node, type, verdict, then the checks that were not PASS (worst
    first), each with its one-line summary; the nodes to act on first."""
    from accelbench.terminal import printable, wrapped

    counts = ", ".join(f"{sum(r.verdict == v for r in rows)} {v}" for v in ORDER if any(r.verdict == v for r in rows))
    print(printable(f"health check sweep {submission}: {len(rows)} node(s): {counts or 'none'}"), file=out)
    name_w = max([len("node")] + [len(r.node) for r in rows])
    type_w = max([len("type")] + [len(r.node_type) for r in rows])
    head = f"{'node':<{name_w}}  {'type':<{type_w}}  {'verdict':<12}  "
    print(printable(head + "checks not passed (or why no verdict)"), file=out)
    for row in sorted(rows, key=lambda r: (ORDER.index(r.verdict), r.node)):
        lead = f"{row.node:<{name_w}}  {row.node_type:<{type_w}}  {row.verdict:<12}  "
        notes = [f"{p['check']} {p['status']}: {p['summary']}" for p in row.problems]
        if row.verdict in (JOB_FAILED, PENDING, UNMEASURED):
            notes = [row.detail]
        lines = []
        for index, note in enumerate(notes or ["-"]):
            lines += wrapped(note, width, lead if index == 0 else " " * len(lead), " " * (len(lead) + 4))
        lines += [(" " * (len(lead) + 4) + line)[:max(width, len(lead) + 24)] for line in row.log_tail]
        print(printable("\n".join(lines), keep_newlines=True), file=out)
    faulty = [r.node for r in rows if r.verdict in (FAIL, JOB_FAILED)]
    if faulty:
        print(printable("\n".join(wrapped(f"faulty: {', '.join(faulty)} (drain with `scontrol update nodename=NODE "
                                           "state=drain reason=...` until the FAIL above is fixed)", width,
                                           "", "    ")), keep_newlines=True), file=out)
