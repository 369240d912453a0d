"""Make tests/data/db/v1.sqlite: a results database as schema version 1 wrote it (frozen fixture).

Run once, commit the .sqlite file, and never regenerate it for a newer schema: the test of the
v1 -> v2 migration must open a file that an old accelbench really left behind. The v1 layout is
copied here on purpose instead of imported, so later edits to the package cannot change it.

    python tests/data/db/make_v1.py            # writes v1.sqlite next to this script
"""
from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

V1_DDL = """
CREATE TABLE schema_version (
    version INTEGER PRIMARY KEY,
    applied_at TEXT NOT NULL
);
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL DEFAULT 'running'
        CHECK (status IN ('running', 'complete', 'interrupted', 'failed')),
    accelbench_version TEXT NOT NULL,
    selection_json TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX runs_started_at ON runs (started_at);
CREATE TABLE machines (
    run_id TEXT PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    hostname TEXT NOT NULL DEFAULT '',
    os TEXT NOT NULL DEFAULT '',
    python TEXT NOT NULL DEFAULT '',
    inventory_json TEXT NOT NULL DEFAULT '{}',
    software_json TEXT NOT NULL DEFAULT '{}',
    environment_json TEXT NOT NULL DEFAULT '{}',
    extra_json TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX machines_hostname ON machines (hostname);
CREATE TABLE results (
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
);
CREATE INDEX results_run ON results (run_id);
CREATE INDEX results_spec ON results (spec_key, run_id);
CREATE INDEX results_workload ON results (workload);
CREATE TABLE skips (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    spec_key TEXT NOT NULL,
    workload TEXT NOT NULL,
    backend TEXT NOT NULL,
    device TEXT NOT NULL,
    params_json TEXT NOT NULL DEFAULT '{}',
    reason TEXT NOT NULL
);
CREATE INDEX skips_run ON skips (run_id);
"""

RUN_COMPLETE = "20250301-101500-a1b2c3"
RUN_INTERRUPTED = "20250302-093000-d4e5f6"


def spec_key(workload: str, backend: str, device: str, params: dict) -> str:
    # the same text key accelbench.results.Spec.key makes (params sorted by name)
    return json.dumps([workload, backend, device, [[k, params[k]] for k in sorted(params)]],
                      separators=(",", ":"))


def result(run_id, workload, backend, device, params, compute_s, flops, bytes_moved,
           passed=True, max_rel_error=1e-6, **more):
    row = {"run_id": run_id, "spec_key": spec_key(workload, backend, device, params),
           "workload": workload, "backend": backend, "device": device,
           "params_json": json.dumps(params), "phases_json": json.dumps({"compute": compute_s}),
           "first_call_s": 0.25, "flops": flops, "bytes_moved": bytes_moved,
           "check_passed": int(passed), "max_rel_error": max_rel_error, "tolerance": 1e-4,
           "check_detail": "", "device_seen": device, "warnings_json": "[]",
           "calls_per_sample": 1, "target_met": 1, "threads": 4, "extra_json": "{}"}
    row.update(more)
    return row


def rows() -> dict[str, list[dict]]:
    n = 1024
    machine = {"hostname": "oldbox", "os": "Linux-6.1-x86_64", "python": "3.11.7",
               "inventory_json": json.dumps({"devices": [{"id": "cpu", "kind": "cpu"}]}),
               "software_json": json.dumps({"numpy": "1.26.4"}),
               "environment_json": json.dumps({"OMP_NUM_THREADS": "4"}), "extra_json": "{}"}
    return {
        "schema_version": [{"version": 1, "applied_at": "2025-03-01T10:14:59+00:00"}],
        "runs": [
            {"id": RUN_COMPLETE, "started_at": "2025-03-01T10:15:00.000000+00:00",
             "finished_at": "2025-03-01T10:16:40.000000+00:00", "status": "complete",
             "accelbench_version": "0.0.9", "selection_json": json.dumps({"workloads": ["matmul", "stream"]})},
            {"id": RUN_INTERRUPTED, "started_at": "2025-03-02T09:30:00.000000+00:00",
             "finished_at": "2025-03-02T09:31:05.000000+00:00", "status": "interrupted",
             "accelbench_version": "0.0.9", "selection_json": json.dumps({"workloads": ["matmul"]})},
        ],
        "machines": [dict(machine, run_id=RUN_COMPLETE), dict(machine, run_id=RUN_INTERRUPTED)],
        "results": [
            result(RUN_COMPLETE, "matmul", "numpy", "cpu", {"n": n, "dtype": "float32"},
                   [0.010, 0.011, 0.012], 2.0 * n**3, 3.0 * 4 * n * n,
                   warnings_json=json.dumps(["IQR is 9% of median"])),
            result(RUN_COMPLETE, "matmul", "numpy", "cpu", {"n": n, "dtype": "float64"},
                   [0.020, 0.021, 0.022], 2.0 * n**3, 3.0 * 8 * n * n),
            result(RUN_COMPLETE, "stream", "numpy", "cpu", {"n": 10_000_000, "op": "triad"},
                   [0.015, 0.016, 0.017], 2.0e7, 2.4e8),
            result(RUN_INTERRUPTED, "matmul", "numpy", "cpu", {"n": n, "dtype": "float32"},
                   [0.0090, 0.0095, 0.0100], 2.0 * n**3, 3.0 * 4 * n * n),
            # a wrong answer (NaN error, stored as NULL): fast, but must never count as a ceiling
            result(RUN_INTERRUPTED, "matmul", "numpy", "cpu", {"n": n, "dtype": "float16"},
                   [0.001, 0.001, 0.001], 2.0 * n**3, 3.0 * 2 * n * n,
                   passed=False, max_rel_error=None, check_detail="output contains NaN"),
        ],
        "skips": [{"run_id": RUN_COMPLETE, "spec_key": spec_key("matmul", "torch", "cuda:0", {"n": n}),
                   "workload": "matmul", "backend": "torch", "device": "cuda:0",
                   "params_json": json.dumps({"n": n}), "reason": "torch not installed"}],
    }


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    target = Path(argv[0]) if argv else Path(__file__).with_name("v1.sqlite")
    target.unlink(missing_ok=True)
    conn = sqlite3.connect(target)
    conn.execute("PRAGMA journal_mode = DELETE")  # one self-contained file, no -wal beside it
    conn.executescript(V1_DDL)
    with conn:
        for table, table_rows in rows().items():
            for row in table_rows:
                names = ", ".join(row)
                marks = ", ".join(f":{k}" for k in row)
                conn.execute(f"INSERT INTO {table} ({names}) VALUES ({marks})", row)
    conn.execute("VACUUM")
    conn.close()
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
