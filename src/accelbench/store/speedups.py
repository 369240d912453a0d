"""Paired speed-ups in the results store (schema v4, table `speedups`): one row per speed-up,
committed on its own, so Ctrl-C during pairing loses at most the one in flight.

Each row names its two results by id and holds, per paired round, the seconds per call of each
side; the ratio and interval are derived where shown (runner/speedups.py).
"""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, cast

from accelbench.results import Measurement, PairedSamples
from accelbench.safe_write import clean_values
from accelbench.store.failures import reported as _reported
from accelbench.store.schema import dumps, loads_samples, result_row, spec_from_row


class SpeedupStore:
    """Mixed into store.db.Store: writing and reading a run's paired speed-ups."""

    # provided by store.db.Store
    _connection: Callable[[], sqlite3.Connection]
    _write: Callable[[], AbstractContextManager[sqlite3.Connection]]
    _require_run: Callable[[str], None]

    @_reported
    def replace_result(self, run_id: str, m: Measurement) -> None:
        """Rewrite the run's stored result of `m`'s spec with `m`, measured again after its own
        measurement disagreed with its paired rounds (session.py); its row id, which the speed-ups
        name, stays."""
        row = clean_values(result_row(run_id, m))  # hostnames, paths: as add_result cleans them
        settings = ", ".join(f"{name} = :{name}" for name in row if name not in ("run_id", "spec_key"))
        with self._write() as conn:
            changed = conn.execute(f"UPDATE results SET {settings} WHERE run_id = :run_id AND spec_key = :spec_key",
                                   row).rowcount
        if changed != 1:
            raise ValueError(f"run {run_id} has {changed} stored results of {m.spec.label()}, not one to replace")

    @_reported  # a full disk mid-pairing: one line naming the file, not a traceback
    def add_speedup(self, run_id: str, paired: PairedSamples) -> int:
        """Store one speed-up's paired rounds (or why it was not paired); returns its row id.

        Both results must already be stored in the run: a speed-up refers to them by id."""
        ids = [self._result_id(run_id, spec.key) for spec in (paired.baseline, paired.candidate)]
        with self._write() as conn:
            cursor = conn.execute(
                "INSERT INTO speedups (run_id, kind, baseline_result, baseline_phase, candidate_result, "
                "candidate_phase, baseline_s_json, candidate_s_json, note, note_kind) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (run_id, paired.kind, ids[0], paired.baseline_phase, ids[1], paired.candidate_phase,
                 dumps([float(x) for x in paired.baseline_s]), dumps([float(x) for x in paired.candidate_s]),
                 str(paired.note), str(paired.note_kind)))
            return int(cursor.lastrowid or 0)

    @_reported
    def speedups(self, run_id: str) -> list[PairedSamples]:
        """The run's paired speed-ups in the order stored (none for runs made before v4 or imported)."""
        self._require_run(run_id)
        rows = self._connection().execute(
            "SELECT s.*, a.workload AS a_workload, a.backend AS a_backend, a.device AS a_device, "
            "a.params_json AS a_params_json, b.workload AS b_workload, b.backend AS b_backend, "
            "b.device AS b_device, b.params_json AS b_params_json FROM speedups s "
            "JOIN results a ON a.id = s.baseline_result JOIN results b ON b.id = s.candidate_result "
            "WHERE s.run_id = ? ORDER BY s.id", (run_id,))
        return [_paired_from_row(row) for row in rows]

    def _result_id(self, run_id: str, spec_key: str) -> int:
        row = self._connection().execute(
            "SELECT id FROM results WHERE run_id = ? AND spec_key = ? ORDER BY id DESC LIMIT 1",
            (run_id, spec_key)).fetchone()
        if row is None:
            raise ValueError(f"no stored result of {spec_key} in run {run_id}: store the results before "
                             "their speed-ups")
        return int(row[0])


class _Prefixed:
    """A row read through a column prefix ("a_"), as spec_from_row wants its columns."""

    def __init__(self, row: sqlite3.Row, prefix: str) -> None:
        self.row, self.prefix = row, prefix

    def __getitem__(self, name: str) -> Any:
        return self.row[self.prefix + name]


def _paired_from_row(row: sqlite3.Row) -> PairedSamples:
    return PairedSamples(
        kind=row["kind"], baseline=spec_from_row(_as_row(row, "a_")), baseline_phase=row["baseline_phase"],
        candidate=spec_from_row(_as_row(row, "b_")), candidate_phase=row["candidate_phase"],
        baseline_s=tuple(float(x) for x in loads_samples(row["baseline_s_json"])),
        candidate_s=tuple(float(x) for x in loads_samples(row["candidate_s_json"])),
        note=row["note"], note_kind=row["note_kind"])


def _as_row(row: sqlite3.Row, prefix: str) -> sqlite3.Row:
    # spec_from_row only reads columns by name, which _Prefixed answers
    return cast(sqlite3.Row, _Prefixed(row, prefix))
