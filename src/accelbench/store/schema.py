"""The results database layout, its migrations, and how the result types map onto its rows.

A fresh database is built by applying every migration in order (0 -> 1 -> 2 -> ...), so a new file and an
upgraded old one go through the same statements and cannot drift apart. Each applied version is
recorded in `schema_version`; the current version is its largest entry.

Current layout (version 6):

    schema_version(version PK, applied_at)
    runs(id PK, started_at, finished_at, status, accelbench_version, selection_json)
    machines(run_id PK -> runs, hostname, os, python, inventory_json, software_json,
             environment_json, extra_json)
    results(id PK, run_id -> runs, spec_key, workload, backend, device, params_json, phases_json,
            first_call_s, flops, bytes_moved, check_passed, max_rel_error, tolerance, check_detail,
            device_seen, warnings_json, calls_per_sample, target_met, threads, extra_json,
            telemetry_json)                                            # telemetry_json: v2
    skips(id PK, run_id -> runs, spec_key, workload, backend, device, params_json, reason)
    run_tags(run_id -> runs, key, value, PK (run_id, key))            # v2
    (v3: results.verdict, verdict_reasons_json, ceiling_forgotten; runs.origin, pid, host)
    speedups(id PK, run_id -> runs, kind, baseline_result -> results, baseline_phase,
             candidate_result -> results, candidate_phase, baseline_s_json, candidate_s_json,
             note)                                                     # v4
    (v5: results.workload_version)
    (v6: results.role)
    (v7: speedups.note_kind)

Times are ISO 8601 UTC text; JSON columns hold text written by json.dumps. `max_rel_error` is NULL
when the error was NaN (SQLite stores NaN as NULL), so a failed check keeps its meaning.
Migrations are frozen once released: change the layout by appending a new one, never by editing.
"""
from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from accelbench.results import Measurement, Skip, Spec
from accelbench.safe_write import clean_values
from accelbench.verdict import caveats_to_json
from accelbench.store.document_io import orjson_loads as _fast_loads  # the one lazy orjson

RUN_STATUSES = ("running", "complete", "interrupted", "failed")
MACHINE_TEXT = ("hostname", "os", "python")  # machine snapshot keys kept as text columns
MACHINE_JSON = ("inventory", "software", "environment")  # ... and as JSON columns

_V1 = (
    """CREATE TABLE schema_version (
        version INTEGER PRIMARY KEY,
        applied_at TEXT NOT NULL
    )""",
    """CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        started_at TEXT NOT NULL,
        finished_at TEXT,
        status TEXT NOT NULL DEFAULT 'running'
            CHECK (status IN ('running', 'complete', 'interrupted', 'failed')),
        accelbench_version TEXT NOT NULL,
        selection_json TEXT NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX runs_started_at ON runs (started_at)",
    """CREATE TABLE machines (
        run_id TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
        hostname TEXT NOT NULL DEFAULT '',
        os TEXT NOT NULL DEFAULT '',
        python TEXT NOT NULL DEFAULT '',
        inventory_json TEXT NOT NULL DEFAULT '{}',
        software_json TEXT NOT NULL DEFAULT '{}',
        environment_json TEXT NOT NULL DEFAULT '{}',
        extra_json TEXT NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX machines_hostname ON machines (hostname)",
    """CREATE TABLE results (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        spec_key TEXT NOT NULL,
        workload TEXT NOT NULL,
        backend TEXT NOT NULL,
        device TEXT NOT NULL,
        params_json TEXT NOT NULL DEFAULT '{}',
        phases_json TEXT NOT NULL,
        first_call_s REAL NOT NULL,
        flops REAL NOT NULL,
        bytes_moved REAL NOT NULL,
        check_passed INTEGER NOT NULL CHECK (check_passed IN (0, 1)),
        max_rel_error REAL,
        tolerance REAL NOT NULL,
        check_detail TEXT NOT NULL DEFAULT '',
        device_seen TEXT,
        warnings_json TEXT NOT NULL DEFAULT '[]',
        calls_per_sample INTEGER NOT NULL DEFAULT 1,
        target_met INTEGER NOT NULL DEFAULT 1 CHECK (target_met IN (0, 1)),
        threads INTEGER,
        extra_json TEXT NOT NULL DEFAULT '{}'
    )""",
    "CREATE INDEX results_run ON results (run_id)",
    "CREATE INDEX results_spec ON results (spec_key, run_id)",
    "CREATE INDEX results_workload ON results (workload)",
    """CREATE TABLE skips (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        spec_key TEXT NOT NULL,
        workload TEXT NOT NULL,
        backend TEXT NOT NULL,
        device TEXT NOT NULL,
        params_json TEXT NOT NULL DEFAULT '{}',
        reason TEXT NOT NULL
    )""",
    "CREATE INDEX skips_run ON skips (run_id)",
)

# v2: run tags (node name, Slurm job id, ... for cluster runs) and per-result telemetry.
_V1_TO_V2 = (
    """CREATE TABLE run_tags (
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (run_id, key)
    )""",
    "CREATE INDEX run_tags_key_value ON run_tags (key, value)",
    "ALTER TABLE results ADD COLUMN telemetry_json TEXT NOT NULL DEFAULT '{}'",
    # best_rates() asks for one device's results of one workload
    "CREATE INDEX results_device ON results (device, workload)",
)

# v3: each result's verdict with its reasons; results that may not be a ceiling any more
# (`accelbench ceilings --forget`); where a run came from (measured here, or imported)
_V2_TO_V3 = (
    "ALTER TABLE results ADD COLUMN verdict TEXT NOT NULL DEFAULT ''",
    "ALTER TABLE results ADD COLUMN verdict_reasons_json TEXT NOT NULL DEFAULT '[]'",
    "ALTER TABLE results ADD COLUMN ceiling_forgotten INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE runs ADD COLUMN origin TEXT NOT NULL DEFAULT 'local'",
    # the process measuring a "running" run: once it has gone, the run was interrupted
    "ALTER TABLE runs ADD COLUMN pid INTEGER",
    "ALTER TABLE runs ADD COLUMN host TEXT",
)

# v4: speed-ups from interleaved paired rounds (runner/pairing.py): per round, seconds per call of
# each side, so the ratio and its interval are derived; no rounds and a note when not paired
_V3_TO_V4 = (
    """CREATE TABLE speedups (
        id INTEGER PRIMARY KEY,
        run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        baseline_result INTEGER NOT NULL REFERENCES results (id) ON DELETE CASCADE,
        baseline_phase TEXT NOT NULL,
        candidate_result INTEGER NOT NULL REFERENCES results (id) ON DELETE CASCADE,
        candidate_phase TEXT NOT NULL,
        baseline_s_json TEXT NOT NULL DEFAULT '[]',
        candidate_s_json TEXT NOT NULL DEFAULT '[]',
        note TEXT NOT NULL DEFAULT ''
    )""",
    "CREATE INDEX speedups_run ON speedups (run_id)",
)

# v5: the version of the workload code that made each result (Workload.version); NULL: unknown,
# stored before workloads had versions
_V4_TO_V5 = ("ALTER TABLE results ADD COLUMN workload_version TEXT",)

# v6: what each result's figures say about a device, as its workload declared it (Workload.role), so a
# result read where that workload is not installed keeps it; NULL: declared none, or stored before
_V5_TO_V6 = ("ALTER TABLE results ADD COLUMN role TEXT",)

# v7: what a paired speed-up's note reports, as a value (runner/speedups.py CROSS_TALK_KIND, REPAIRED_KIND), so no
# reader decides from its words; the notes stored before say it by their opening words, read here once
_V6_TO_V7 = ("ALTER TABLE speedups ADD COLUMN note_kind TEXT NOT NULL DEFAULT ''",
             "UPDATE speedups SET note_kind = 'cross_talk' WHERE note LIKE 'cross-talk:%'",
             "UPDATE speedups SET note_kind = 'paired_twice' WHERE note LIKE 'paired twice:%'")

# version -> statements that take a database from version - 1 to version
MIGRATIONS: dict[int, tuple[str, ...]] = {1: _V1, 2: _V1_TO_V2, 3: _V2_TO_V3, 4: _V3_TO_V4, 5: _V4_TO_V5,
                                          6: _V5_TO_V6, 7: _V6_TO_V7}
CURRENT_VERSION = max(MIGRATIONS)


class SchemaError(Exception):
    """The file is an SQLite database but not one this accelbench can use (message says why)."""


def read_version(conn: sqlite3.Connection) -> int:
    """The schema version of an open database: 0 for an empty file.

    Raises SchemaError for a database that holds other tables but no `schema_version`:
    it belongs to something else, and adding our tables to it would be wrong.
    """
    names = {row[0] for row in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")}
    if "schema_version" not in names:
        if names:
            shown = ", ".join(sorted(names)[:5])
            raise SchemaError(f"it is an SQLite database of something else (tables: {shown})")
        return 0
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def migrate(conn: sqlite3.Connection) -> tuple[int, int]:
    """Bring the database to CURRENT_VERSION in one transaction; returns (from, to).

    The connection must be in autocommit mode (isolation_level=None) so that BEGIN here is the
    only transaction: a failure anywhere rolls every step back and leaves the file as it was.
    BEGIN IMMEDIATE takes the write lock before reading the version, so two processes opening
    the same new file do not both create the tables.
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        start = read_version(conn)
        if start > CURRENT_VERSION:
            raise SchemaError(f"it was written by a newer accelbench (schema version {start}; "
                              f"this one reads up to {CURRENT_VERSION}): upgrade accelbench")
        for version in range(start + 1, CURRENT_VERSION + 1):
            for statement in MIGRATIONS[version]:
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version (version, applied_at) VALUES (?, ?)",
                         (version, datetime.now(timezone.utc).isoformat(timespec="seconds")))
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # some errors (disk full) have already rolled back
            conn.execute("ROLLBACK")
        raise
    return start, CURRENT_VERSION


# -- rows <-> types: how a Measurement, Skip and machine snapshot lie in the tables ---------------


def _json_default(value: Any) -> Any:
    # numpy scalars and the like: never lose a finished result over a value's type
    if hasattr(value, "item"):
        try:
            return value.item()
        except (TypeError, ValueError):
            pass
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    return str(value)


# one encoder, not one per call as json.dumps with options makes: an import writes 600,000 columns
_ENCODER = json.JSONEncoder(default=_json_default, separators=(",", ":"))


def dumps(value: Any) -> str:
    return _ENCODER.encode(value)


def loads_samples(text: str) -> Any:
    """A column of samples (phases_json, a speed-up's sample lists) read back: lists of numbers no
    larger than seconds, which orjson reads exactly and three times as fast as the standard library
    (a report reads 10,000 of them). Other columns keep json.loads: orjson turns an integer beyond
    64 bits into a float, and refuses the NaN and Infinity that dumps may write; the library reads
    such text here too, and stands in where orjson is not installed."""
    fast = _fast_loads()
    if fast is not None:
        try:
            return fast(text)
        except ValueError:  # orjson.JSONDecodeError is one
            pass
    return json.loads(text)


def result_row(run_id: str, m: Measurement) -> dict[str, Any]:
    spec = m.spec.to_dict()
    error = float(m.check.max_rel_error)
    return {
        "run_id": run_id, "spec_key": m.spec.key, "workload": m.spec.workload,
        "backend": m.spec.backend, "device": m.spec.device, "params_json": dumps(spec["params"]),
        "phases_json": dumps({k: [float(x) for x in v] for k, v in m.phases_s.items()}),
        "first_call_s": float(m.first_call_s), "flops": float(m.work.flops),
        "bytes_moved": float(m.work.bytes_moved), "check_passed": int(bool(m.check.passed)),
        "max_rel_error": None if math.isnan(error) else error, "tolerance": float(m.check.tolerance),
        "check_detail": str(m.check.detail), "device_seen": m.check.device_seen,
        "warnings_json": dumps(caveats_to_json(m.warnings)),  # {"text", "kind"} or, before kinds, the text
        "calls_per_sample": int(m.calls_per_sample), "target_met": int(bool(m.target_met)),
        "threads": None if m.threads is None else int(m.threads), "extra_json": dumps(dict(m.extra)),
        "telemetry_json": dumps(dict(m.telemetry)),
        "verdict": m.verdict, "verdict_reasons_json": dumps(caveats_to_json(m.verdict_reasons)),
        "workload_version": m.workload_version, "role": m.role,
    }


def spec_from_row(row: sqlite3.Row) -> Spec:
    return Spec.make(row["workload"], row["backend"], row["device"], **json.loads(row["params_json"]))


def measurement_from_row(row: sqlite3.Row) -> Measurement:
    error = row["max_rel_error"]
    return Measurement.from_dict({
        "spec": {"workload": row["workload"], "backend": row["backend"], "device": row["device"],
                 "params": json.loads(row["params_json"])},
        "phases_s": loads_samples(row["phases_json"]),
        "first_call_s": row["first_call_s"],
        "work": {"flops": row["flops"], "bytes_moved": row["bytes_moved"]},
        "check": {"passed": bool(row["check_passed"]),
                  "max_rel_error": math.nan if error is None else error,
                  "tolerance": row["tolerance"], "detail": row["check_detail"],
                  "device_seen": row["device_seen"]},
        "warnings": json.loads(row["warnings_json"]),
        "calls_per_sample": row["calls_per_sample"],
        "target_met": bool(row["target_met"]),
        "threads": row["threads"],
        "telemetry": json.loads(row["telemetry_json"]),
        "extra": json.loads(row["extra_json"]),
        "verdict": row["verdict"],
        "verdict_reasons": json.loads(row["verdict_reasons_json"]),
        "workload_version": row["workload_version"],
        "role": row["role"],
    })


def machine_row(run_id: str, machine: Mapping[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"run_id": run_id}
    row.update({k: str(machine.get(k) or "") for k in MACHINE_TEXT})
    # the environment and hostnames may hold bytes the system could not decode: stored as \xNN
    row.update({f"{k}_json": dumps(clean_values(machine.get(k) or {})) for k in MACHINE_JSON})
    known = set(MACHINE_TEXT + MACHINE_JSON)
    row["extra_json"] = dumps(clean_values({k: v for k, v in machine.items() if k not in known}))
    return row


def update_machine_extra(conn: sqlite3.Connection, run_id: str, machine: Mapping[str, Any]) -> None:
    """Rewrite a run's extra machine keys, inside the caller's transaction: readings taken after the
    run started (its machine reference at the middle and the end) join the snapshot start_run stored."""
    conn.execute("UPDATE machines SET extra_json = ? WHERE run_id = ?",
                 (machine_row(run_id, machine)["extra_json"], run_id))


def skip_row(run_id: str, s: Skip) -> dict[str, Any]:
    return {"run_id": run_id, "spec_key": s.spec.key, "workload": s.spec.workload,
            "backend": s.spec.backend, "device": s.spec.device,
            "params_json": dumps(s.spec.to_dict()["params"]), "reason": str(s.reason)}


def machine_from_row(row: sqlite3.Row) -> dict[str, Any]:
    snapshot: dict[str, Any] = {k: row[k] for k in MACHINE_TEXT}
    snapshot.update({k: json.loads(row[f"{k}_json"]) for k in MACHINE_JSON})
    snapshot.update(json.loads(row["extra_json"]))
    return clean_values(snapshot)  # as stored before the environment was cleaned on the way in
