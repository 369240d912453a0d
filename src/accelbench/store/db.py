"""The results store: one SQLite file, WAL mode, one committed transaction per result.

Every write commits before it returns, so Ctrl-C or a SIGKILL loses at most the result in flight,
and a run whose status is still "running" after its process has gone was interrupted. Imports
and add_results write a whole batch in one transaction: all of it is stored, or none.
"""
from __future__ import annotations

import json
import os
import secrets
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from accelbench._version import __version__
from accelbench.errors import UsageError
from accelbench.results import Measurement, Skip
from accelbench.safe_write import clean_text, clean_values
from accelbench.store import liveness
from accelbench.store.ceiling_rows import CeilingRows
from accelbench.store.failures import reported as _reported
from accelbench.store.journal import rollback_journal
from accelbench.store.opening import NoDatabaseError, open_database  # noqa: F401 - commands catch it
from accelbench.store.paths import resolve_db_path
from accelbench.store.schema import (RUN_STATUSES, dumps, machine_from_row, machine_row,
                                     measurement_from_row, result_row, skip_row, spec_from_row,
                                     update_machine_extra)
from accelbench.store.speedups import SpeedupStore

BUSY_TIMEOUT_S = 30.0  # another process writing the same file: wait for its lock, not fail


@dataclass(frozen=True)
class RunInfo:
    """One stored run as listed by `accelbench runs`."""

    id: str
    started_at: str
    finished_at: str | None
    status: str
    accelbench_version: str
    selection: dict[str, Any]
    hostname: str
    result_count: int
    skip_count: int
    tags: dict[str, str] = field(default_factory=dict)
    workloads: list[str] = field(default_factory=list)  # measured or skipped, sorted


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def new_run_id(now: datetime | None = None) -> str:
    """Time-based so ids sort by start, with a random suffix so parallel jobs do not collide."""
    now = now or datetime.now(timezone.utc)
    return f"{now:%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"


def _insert(conn: sqlite3.Connection, table: str, row: Mapping[str, Any]) -> int:
    names = ", ".join(row)
    marks = ", ".join(f":{name}" for name in row)
    values = {name: clean_text(v) if isinstance(v, str) else v for name, v in row.items()}  # hostnames, paths
    cursor = conn.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", values)
    return int(cursor.lastrowid or 0)


def _insert_many(conn: sqlite3.Connection, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """One executemany for rows that share their columns (as result_row's and skip_row's do)."""
    if not rows:
        return
    names = list(rows[0])
    marks = ", ".join(f":{name}" for name in names)
    rows = [{name: clean_text(v) if isinstance(v, str) else v for name, v in row.items()} for row in rows]
    conn.executemany(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({marks})", rows)


def _restore(conn: sqlite3.Connection, run_id: str, *, started_at: str, finished_at: str | None,
             status: str, accelbench_version: str, selection: Mapping[str, Any],
             machine: Mapping[str, Any], tags: Mapping[str, Any], results: Sequence[Measurement] = (),
             skips: Sequence[Skip], origin: str = "imported", pid: int | None = None,
             host: str | None = None,
             result_rows: tuple[Sequence[str], Sequence[Sequence[Any]]] | None = None) -> bool:
    """One run's rows, inside the caller's transaction; False if the id is already stored.

    `origin` is "local" for runs measured here, "imported" otherwise: imported results never
    become this machine's ceilings."""
    if status not in RUN_STATUSES:
        raise ValueError(f"run status {status!r}: expected one of {', '.join(RUN_STATUSES)}")
    if conn.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone():
        return False
    _insert(conn, "runs", {"id": run_id, "started_at": started_at, "finished_at": finished_at,
                           "status": status, "accelbench_version": accelbench_version,
                           "selection_json": dumps(clean_values(dict(selection))), "origin": origin,
                           "pid": pid, "host": host})
    _insert(conn, "machines", machine_row(run_id, machine))
    conn.executemany("INSERT INTO run_tags (run_id, key, value) VALUES (?, ?, ?)", _tag_rows(run_id, tags))
    if result_rows is None:
        _insert_many(conn, "results", [result_row(run_id, m) for m in results])
    else:  # (columns, value tuples) already built, as an import builds them from the file
        columns, values = result_rows
        conn.executemany(f"INSERT INTO results ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})",
                         values)
    _insert_many(conn, "skips", [skip_row(run_id, s) for s in skips])
    return True


def _tag_rows(run_id: str, tags: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    rows = []
    for key, value in tags.items():
        if not isinstance(key, str) or not key:
            raise UsageError(f"run tag {key!r}: a tag name must be a non-empty string")
        rows.append((run_id, clean_text(key), clean_text(str(value))))  # from argv or a file: any bytes
    return rows


# a run of the command line: not one the Python API made (session.run and api.bench record "via")
_FROM_COMMAND_LINE = "coalesce(json_extract(selection_json, '$.via'), '') != 'python'"


class Store(SpeedupStore, CeilingRows):
    """The results history in one SQLite file.

    `Store(path)` opens (creating the file and its folder if needed) and migrates to the current
    schema, after identifying the file read-only (store/opening.py): a file that is not an
    accelbench database is refused and left unchanged; an older one is backed up first.
    Path resolution: explicit path > $ACCELBENCH_DB > the user data directory.
    """

    def __init__(self, path: str | Path | None = None, *, busy_timeout_s: float = BUSY_TIMEOUT_S,
                 create: bool = True, notify: Callable[[str], None] | None = None):
        """`create=False` for reading only: no database at the path is a NoDatabaseError and
        nothing is created. `notify` gets the one-line notice of an upgrade (default: stderr)."""
        self.path = resolve_db_path(path)
        opened = open_database(self.path, create=create, busy_timeout_s=busy_timeout_s, notify=notify)
        self._conn: sqlite3.Connection | None = opened.conn
        self.migrated_from, self.schema_version = opened.migrated_from, opened.schema_version
        self.journal_mode = opened.journal_mode

    # -- plumbing --------------------------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One transaction, committed on exit, rolled back on any error (Ctrl-C included)."""
        conn = self._connection()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ValueError(f"results database {self.path} is closed")
        return self._conn

    def _require_run(self, run_id: str) -> None:
        found = self._connection().execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone()
        if found is None:
            raise UsageError(f"unknown run {run_id!r} in {self.path}; `accelbench runs` lists them")

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- writing ---------------------------------------------------------------------------

    @_reported
    def start_run(self, machine: Mapping[str, Any], selection: Mapping[str, Any],
                  tags: Mapping[str, Any] | None = None) -> str:
        """Record a new run (status "running") with its machine snapshot; returns its id.

        `machine` keys: hostname, os, python (text); inventory, software, environment (JSON
        objects); any other key is kept as well and comes back from machine().
        """
        for _attempt in range(5):  # same second and same random suffix: draw again
            run_id = new_run_id()
            if self.restore_run(run_id, started_at=utc_now_iso(), finished_at=None,
                                status="running", accelbench_version=__version__,
                                selection=selection, machine=machine, tags=tags or {},
                                results=(), skips=(), origin="local",
                                pid=os.getpid(), host=liveness.this_host()):
                return run_id
        raise RuntimeError("could not draw a unique run id")

    @_reported
    def restore_run(self, run_id: str, **run: Any) -> bool:
        """Insert a whole run under its own id in one transaction (keywords: those of `_restore`).

        Returns False, changing nothing, when a run with that id is already stored.
        """
        return bool(self.restore_runs([{"run_id": run_id, **run}]))

    @_reported
    def restore_runs(self, runs: Iterable[Mapping[str, Any]], *, bulk: bool = False) -> list[str]:
        """Insert whole runs (each a mapping of restore_run's arguments) in ONE transaction, as an
        import wants: every run is stored, or none. Returns the ids added; stored ones are skipped.
        bulk: through a rollback journal while no one else has the file open (journal.py)."""
        with rollback_journal(self._connection()) if bulk else nullcontext(), self._write() as conn:
            return [run["run_id"] for run in runs if _restore(conn, **run)]

    @_reported
    def add_result(self, run_id: str, m: Measurement) -> int:
        """Store one finished measurement, committed before returning; returns its row id."""
        try:
            with self._write() as conn:
                return _insert(conn, "results", result_row(run_id, m))
        except sqlite3.IntegrityError:
            self._require_run(run_id)  # the usual cause: a run id that does not exist
            raise

    @_reported
    def add_results(self, run_id: str, measurements: Sequence[Measurement]) -> int:
        """Store many measurements in one transaction: all or none (for imports and bulk loads;
        a running benchmark uses add_result, so each finished result is safe at once).
        Returns how many were stored."""
        rows = [result_row(run_id, m) for m in measurements]
        try:
            with self._write() as conn:
                _insert_many(conn, "results", rows)
        except sqlite3.IntegrityError:
            self._require_run(run_id)
            raise
        return len(rows)

    @_reported
    def add_skip(self, run_id: str, s: Skip) -> None:
        try:
            with self._write() as conn:
                _insert(conn, "skips", skip_row(run_id, s))
        except sqlite3.IntegrityError:
            self._require_run(run_id)
            raise

    @_reported
    def update_machine(self, run_id: str, machine: Mapping[str, Any]) -> None:
        """Rewrite a run's extra machine keys: readings taken after the run started (its machine
        reference at the middle and the end) join the snapshot start_run stored."""
        with self._write() as conn:
            update_machine_extra(conn, run_id, machine)

    @_reported
    def finish_run(self, run_id: str, status: str) -> None:
        """Close a run as complete, interrupted or failed, stamping its finish time."""
        if status not in RUN_STATUSES or status == "running":
            raise ValueError(f"finish status {status!r}: expected complete, interrupted or failed")
        self._require_run(run_id)
        with self._write() as conn:
            conn.execute("UPDATE runs SET status = ?, finished_at = ? WHERE id = ?",
                         (status, utc_now_iso(), run_id))

    @_reported
    def add_tags(self, run_id: str, tags: Mapping[str, Any]) -> None:
        """Add or overwrite key/value tags (node name, Slurm job id, ...); values stored as text."""
        self._require_run(run_id)
        with self._write() as conn:
            conn.executemany("INSERT OR REPLACE INTO run_tags (run_id, key, value) VALUES (?, ?, ?)",
                             _tag_rows(run_id, tags))

    # -- reading ---------------------------------------------------------------------------

    _RUNS_SQL = """
        SELECT runs.*, COALESCE(m.hostname, '') AS hostname,
            (SELECT COUNT(*) FROM results r WHERE r.run_id = runs.id) AS result_count,
            (SELECT COUNT(*) FROM skips s WHERE s.run_id = runs.id) AS skip_count,
            (SELECT group_concat(workload, char(10)) FROM (SELECT workload FROM results r WHERE r.run_id = runs.id
             UNION SELECT workload FROM skips s WHERE s.run_id = runs.id)) AS workloads
        FROM runs LEFT JOIN machines m ON m.run_id = runs.id"""
    _NEWEST_FIRST = " ORDER BY runs.started_at DESC, runs.id DESC"

    def _run_info(self, row: sqlite3.Row) -> RunInfo:
        return RunInfo(id=row["id"], started_at=row["started_at"], finished_at=row["finished_at"],
                       status=liveness.shown_status(row["status"], row["pid"], row["host"], row["started_at"]),
                       accelbench_version=row["accelbench_version"],
                       selection=json.loads(row["selection_json"]), hostname=row["hostname"],
                       result_count=row["result_count"], skip_count=row["skip_count"],
                       tags=self.tags(row["id"]), workloads=sorted(filter(None, (row["workloads"] or "").split("\n"))))

    @_reported
    def runs(self, limit: int | None = None) -> list[RunInfo]:
        """Stored runs, newest first, with their result and skip counts."""
        sql = self._RUNS_SQL + self._NEWEST_FIRST
        args: tuple[int, ...] = ()
        if limit is not None:
            sql, args = sql + " LIMIT ?", (int(limit),)
        return [self._run_info(row) for row in self._connection().execute(sql, args)]

    @_reported
    def run_info(self, run_id: str) -> RunInfo:
        row = self._connection().execute(self._RUNS_SQL + " WHERE runs.id = ?", (run_id,)).fetchone()
        if row is None:
            self._require_run(run_id)
        return self._run_info(row)

    @_reported
    def resolve_run(self, ref: str) -> str:
        """A run id from a full id, a unique prefix or suffix, `latest` or `latest~N` (N runs before it).

        `latest` counts runs that stored a result, where any did: a run that measured nothing (every
        spec skipped) is not the latest answer; and runs of the command line, where there are any: a
        run made from Python (`accelbench.run`, `bench`: selection "via" python) is reached by its id."""
        ref = str(ref).strip()
        conn = self._connection()
        if ref == "latest" or ref.startswith("latest~"):
            back = self._parse_back(ref)
            measured = conn.execute("SELECT 1 FROM results LIMIT 1").fetchone() is not None
            command_line = conn.execute(
                f"SELECT 1 FROM runs WHERE {_FROM_COMMAND_LINE} LIMIT 1").fetchone() is not None
            ids = [r[0] for r in conn.execute(
                "SELECT id FROM runs WHERE (NOT ? OR EXISTS (SELECT 1 FROM results WHERE results.run_id = runs.id)) "
                f"AND (NOT ? OR {_FROM_COMMAND_LINE}) ORDER BY started_at DESC, id DESC LIMIT ?",
                (measured, command_line, back + 1))]
            if not ids:
                raise UsageError(f"run {ref!r}: no runs are stored in {self.path} yet")
            if len(ids) <= back:
                raise UsageError(f"run {ref!r}: {self.path} holds {len(ids)} run(s); accepted: "
                                 f"latest, latest~0 .. latest~{len(ids) - 1}, or a run id")
            return ids[back]
        if conn.execute("SELECT 1 FROM runs WHERE id = ?", (ref,)).fetchone():
            return ref
        matches = [r[0] for r in conn.execute(
            "SELECT id FROM runs WHERE substr(id, 1, :n) = :ref OR substr(id, -:n) = :ref "
            "ORDER BY started_at DESC, id DESC", {"n": len(ref), "ref": ref})] if ref else []
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise UsageError(f"run {ref!r} is ambiguous in {self.path}, it matches: "
                             f"{', '.join(matches[:10])}; give more characters")
        recent = ", ".join(info.id for info in self.runs(limit=5)) or "none stored yet"
        raise UsageError(f"unknown run {ref!r} in {self.path}; accepted: a run id or a unique "
                         f"prefix or suffix of one, latest, latest~N (recent runs: {recent})")

    @staticmethod
    def _parse_back(ref: str) -> int:
        text = ref[len("latest~"):] if ref != "latest" else "0"
        if not text.isdigit():
            raise UsageError(f"run {ref!r}: expected latest~N with N a whole number, e.g. latest~1")
        return int(text)

    @_reported
    def spec_keys(self, run_id: str) -> set[str]:
        """The keys of the specs the run stored a result of (cheap: no samples are read)."""
        self._require_run(run_id)
        return {row[0] for row in self._connection().execute(
            "SELECT DISTINCT spec_key FROM results WHERE run_id = ?", (run_id,))}

    @_reported
    def results(self, run_id: str) -> list[Measurement]:
        """The run's measurements in the order they were stored."""
        self._require_run(run_id)
        rows = self._connection().execute(
            "SELECT * FROM results WHERE run_id = ? ORDER BY id", (run_id,))
        return [measurement_from_row(row) for row in rows]

    @_reported
    def skips(self, run_id: str) -> list[Skip]:
        self._require_run(run_id)
        rows = self._connection().execute("SELECT * FROM skips WHERE run_id = ? ORDER BY id", (run_id,))
        return [Skip(spec_from_row(row), row["reason"]) for row in rows]

    @_reported
    def machine(self, run_id: str) -> dict[str, Any]:
        """The machine snapshot given to start_run (text fields, JSON objects, extra keys)."""
        self._require_run(run_id)
        row = self._connection().execute("SELECT * FROM machines WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            return {}
        return machine_from_row(row)

    @_reported
    def tags(self, run_id: str) -> dict[str, str]:
        rows = self._connection().execute(
            "SELECT key, value FROM run_tags WHERE run_id = ? ORDER BY key", (run_id,))
        return {row["key"]: row["value"] for row in rows}
