"""The store's side of measured ceilings: which stored results may be one, and forgetting them.
store/ceilings.py applies the rules to what these queries return (a mixin of Store)."""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from accelbench.results import Measurement
from accelbench.store.failures import reported as _reported
from accelbench.store.schema import measurement_from_row


class CeilingRows:
    # provided by store.db.Store
    _connection: Callable[[], sqlite3.Connection]
    _write: Callable[[], AbstractContextManager[sqlite3.Connection]]

    @_reported
    def ceiling_candidates(self, hostname: str) -> list[tuple[Measurement, str]]:
        """(measurement, run id) of every result that may be one of this host's measured ceilings:
        measured here (not imported), passed its check, not forgotten, of a workload that measures
        a ceiling. store/ceilings.py applies the remaining rules, once, for every caller."""
        from accelbench.workloads.registry import builtin_workload_class

        conn = self._connection()
        names = [row[0] for row in conn.execute("SELECT DISTINCT workload FROM results")]
        ceiling_workloads = [n for n in names if getattr(builtin_workload_class(n), "measures_ceiling", False)]
        if not ceiling_workloads:
            return []
        marks = ", ".join("?" for _ in ceiling_workloads)
        rows = conn.execute(
            "SELECT r.* FROM results r JOIN runs ON runs.id = r.run_id "
            "LEFT JOIN machines m ON m.run_id = r.run_id "
            f"WHERE r.workload IN ({marks}) AND r.check_passed = 1 AND r.ceiling_forgotten = 0 "
            "AND runs.origin = 'local' AND COALESCE(m.hostname, '') = ? ORDER BY r.id",
            (*ceiling_workloads, hostname))
        return [(measurement_from_row(row), row["run_id"]) for row in rows]

    @_reported
    def foreign_peak_results(self, hostname: str) -> list[tuple[Measurement, str, str]]:
        """(measurement, run id, host) of `accelbench peak`'s results that are not this host's
        ceilings: imported runs, or measured on another host. They are shown, never a ceiling."""
        rows = self._connection().execute(
            "SELECT r.*, COALESCE(m.hostname, '') AS peak_host FROM results r JOIN runs ON runs.id = r.run_id "
            "LEFT JOIN machines m ON m.run_id = r.run_id "
            "WHERE r.workload = 'matmul' AND r.check_passed = 1 AND r.params_json LIKE '%\"peak\"%' "
            "AND (runs.origin != 'local' OR COALESCE(m.hostname, '') != ?) ORDER BY r.id", (hostname,))
        return [(measurement_from_row(row), row["run_id"], row["peak_host"]) for row in rows]

    @_reported
    def forget_ceilings(self, hostname: str, device: str | None = None) -> int:
        """Set this host's stored results aside as ceilings (all devices, or one); returns how many."""
        sql = ("UPDATE results SET ceiling_forgotten = 1 WHERE ceiling_forgotten = 0 AND run_id IN "
               "(SELECT run_id FROM machines WHERE hostname = ?)")
        args: tuple[Any, ...] = (hostname,)
        if device is not None:
            sql, args = sql + " AND device = ?", (hostname, device)
        with self._write() as conn:
            return conn.execute(sql, args).rowcount
