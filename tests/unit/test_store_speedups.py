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


def test_a_v6_database_keeps_what_its_paired_notes_reported_as_a_kind(tmp_path):
    """v7 (issue 43): a note's kind is a column; notes stored before say it by their opening words,
    read once by the upgrade, and the ratio decides from the kind."""
    from accelbench.runner.speedups import CROSS_TALK_KIND, REPAIRED_KIND

    path = tmp_path / "v6.sqlite"
    _v3_database(path)
    conn = sqlite3.connect(path, isolation_level=None)
    for version in (4, 5, 6):
        for statement in schema.MIGRATIONS[version]:
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version VALUES (?, '2025-01-01T00:00:00+00:00')", (version,))
    ids = [row[0] for row in conn.execute("SELECT id FROM results ORDER BY id")]
    for note in ("cross-talk: numpy@cpu: 3 of its blocks ran beside our threads", "paired twice: the first rounds "
                 "were contaminated", "", "not paired: too long"):
        conn.execute("INSERT INTO speedups (run_id, kind, baseline_result, baseline_phase, candidate_result, "
                     "candidate_phase, baseline_s_json, candidate_s_json, note) VALUES (?, ?, ?, 'compute', ?, "
                     "'compute', ?, ?, ?)", (RUN, CPU_ALL_CORES, ids[1], ids[0], "[0.02,0.02,0.02,0.02,0.02,0.02]",
                                             "[0.01,0.01,0.01,0.01,0.01,0.01]", note))
    conn.close()
    with Store(path) as store:
        assert store.migrated_from == 6
        kinds = [p.note_kind for p in store.speedups(RUN)]
    assert kinds == [CROSS_TALK_KIND, REPAIRED_KIND, "", ""]


def test_a_reworded_note_decides_the_same_and_words_alone_decide_nothing():
    """The ratio reads the note's kind: the same kind in other words is still cross-talk, and a note
    that only reads like cross-talk is not."""
    from accelbench.runner.speedups import CROSS_TALK, CROSS_TALK_KIND, Speedups, wanted_speedups

    fast, slow = _m(2, 0.010), _m(1, 0.020)
    (wanted,) = [w for w in wanted_speedups([fast, slow]) if w.kind == CPU_ALL_CORES]
    rounds = dict(baseline_s=wanted.baseline.phases_s["compute"][:8], candidate_s=wanted.candidate.phases_s["compute"][:8])

    def paired(note, kind):
        return PairedSamples(CPU_ALL_CORES, wanted.baseline.spec, wanted.baseline_phase, wanted.candidate.spec,
                             wanted.candidate_phase, **rounds, note=note, note_kind=kind)

    reworded = Speedups([paired("our own busy threads ran beside 3 of its blocks", CROSS_TALK_KIND)]).ratio(wanted)
    assert reworded.contaminated == "our own busy threads ran beside 3 of its blocks"
    lookalike = Speedups([paired(f"{CROSS_TALK} but no kind", "")]).ratio(wanted)
    assert not lookalike.contaminated
