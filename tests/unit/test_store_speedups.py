"""Schema v4: paired speed-ups stored per round, a v3 database upgraded to hold them (real SQLite files)."""
from __future__ import annotations

import sqlite3

import pytest

from accelbench.results import Check, Measurement, PairedSamples, Spec, Work
from accelbench.report.analysis import analyse
from accelbench.runner.speedups import CPU_ALL_CORES
from accelbench.store import schema
from accelbench.store.db import Store

RUN = "20250101-000000-abcdef"


def _m(threads: int, seconds: float) -> Measurement:
    return Measurement(spec=Spec.make("matmul", "numpy", "cpu", n=64, dtype="float64", threads=threads),
                       phases_s={"compute": tuple(seconds * (1 + 0.001 * i) for i in range(10))}, first_call_s=seconds,
                       work=Work(2 * 64**3, 3 * 8 * 64**2), check=Check(True, 0.0, 1e-12), threads=threads,
                       verdict="valid")


def _v3_database(path) -> None:
    """A v3 file built by the v1..v3 migrations, holding one run with two results."""
    conn = sqlite3.connect(path, isolation_level=None)
    for version in (1, 2, 3):
        for statement in schema.MIGRATIONS[version]:
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version VALUES (?, '2025-01-01T00:00:00+00:00')", (version,))
    conn.execute("INSERT INTO runs (id, started_at, finished_at, status, accelbench_version) "
                 "VALUES (?, '2025-01-01T00:00:00', '2025-01-01T00:01:00', 'complete', '0.3')", (RUN,))
    conn.execute("INSERT INTO machines (run_id, hostname) VALUES (?, 'oldbox')", (RUN,))
    for m in (_m(2, 0.010), _m(1, 0.020)):
        row = {k: v for k, v in schema.result_row(RUN, m).items() if k not in ("workload_version", "role")}  # v5, v6
        conn.execute(f"INSERT INTO results ({', '.join(row)}) VALUES ({', '.join('?' for _ in row)})", list(row.values()))
    conn.close()


def test_a_v3_database_is_upgraded_to_v4_keeping_its_runs_which_show_unpaired(tmp_path):
    path = tmp_path / "old.sqlite"
    _v3_database(path)
    with Store(path) as store:
        assert (store.migrated_from, store.schema_version) == (3, schema.CURRENT_VERSION)
        assert store.speedups(RUN) == []
        rows = analyse(store.results(RUN), {}, store.speedups(RUN))
    one = next(r for r in rows if r.spec.param("threads") == 1)
    assert not one.speedup_all.paired and one.speedup_all.basis() == "unpaired"
    assert abs(one.speedup_all.ratio - 0.5) < 0.01
    assert (tmp_path / "old.sqlite.v3-backup").exists()  # kept before the upgrade
    conn = sqlite3.connect(path)
    assert [r[0] for r in conn.execute("SELECT version FROM schema_version ORDER BY version")] == \
        list(range(1, schema.CURRENT_VERSION + 1))
    conn.close()


def test_paired_rounds_are_stored_per_round_and_read_back(tmp_path):
    path = tmp_path / "old.sqlite"
    _v3_database(path)
    fast, slow = _m(2, 0.010), _m(1, 0.020)
    rounds = PairedSamples(CPU_ALL_CORES, fast.spec, "compute", slow.spec, "compute",
                           baseline_s=(0.010, 0.011, 0.010, 0.012, 0.010, 0.011),
                           candidate_s=(0.030, 0.033, 0.030, 0.036, 0.030, 0.033))
    not_paired = PairedSamples("cpu_one_thread", slow.spec, "compute", fast.spec, "compute", note="not paired: why")
    with Store(path) as store:
        store.add_speedup(RUN, rounds)
        store.add_speedup(RUN, not_paired)
        with pytest.raises(ValueError, match="store the results before"):
            store.add_speedup(RUN, PairedSamples(CPU_ALL_CORES, Spec.make("matmul", "x", "y"), "compute",
                                                 slow.spec, "compute", (1.0,), (1.0,)))
    with Store(path) as store:  # a new connection: what is in the file
        assert store.speedups(RUN) == [rounds, not_paired]
        rows = analyse(store.results(RUN), {}, store.speedups(RUN))
    one = next(r for r in rows if r.spec.param("threads") == 1)
    assert one.speedup_all.paired and one.speedup_all.pairs == 6 and abs(one.speedup_all.ratio - 1 / 3) < 1e-9
    two = next(r for r in rows if r.spec.param("threads") == 2)
    assert not two.speedup_one.paired and two.speedup_one.method == "unpaired: not paired: why"


def test_a_fresh_database_and_an_upgraded_one_have_the_same_layout(tmp_path):
    _v3_database(tmp_path / "old.sqlite")
    Store(tmp_path / "old.sqlite").close()
    Store(tmp_path / "new.sqlite").close()

    def layout(path):
        conn = sqlite3.connect(path)
        found = {name: [tuple(c[1:]) for c in conn.execute(f"PRAGMA table_info({name})")]
                 for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        conn.close()
        return found
    assert layout(tmp_path / "old.sqlite") == layout(tmp_path / "new.sqlite")
    assert "speedups" in layout(tmp_path / "new.sqlite")
