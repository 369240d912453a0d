"""The results store: round trips, run refs, ceilings, opening errors, migration, export/import."""
from __future__ import annotations

import copy
import math
import os
import shutil
import sqlite3

import pytest

from accelbench.errors import UsageError
from accelbench.results import Check, Measurement, Skip, Spec, Work
from accelbench.store import schema
from accelbench.devices.model import Device, PeakFigure
from accelbench.store.ceilings import stored_ceilings
from accelbench.store.db import Store
from accelbench.store.export import export_runs, import_document, read_json, write_json
from accelbench.store.paths import default_db_path, resolve_db_path

MACHINE = {"hostname": "box", "os": "Linux-6.8-x86_64", "python": "3.11.7",
           "inventory": {"devices": [{"id": "cpu"}, {"id": "cuda:0"}]},
           "software": {"numpy": "2.1.0"}, "environment": {"OMP_NUM_THREADS": "8"},
           "cpu_governor": "performance"}
V1_RUN_COMPLETE = "20250301-101500-a1b2c3"
V1_RUN_INTERRUPTED = "20250302-093000-d4e5f6"


def measurement(n: int = 256, dtype: str = "float32", passed: bool = True, compute_s=None,
                workload: str = "matmul", device: str = "cuda:0") -> Measurement:
    """A measurement with every field set away from its default."""
    compute_s = tuple(compute_s or (1.0e-3, 1.1e-3, 0.9e-3, 1.05e-3))
    return Measurement(
        spec=Spec.make(workload, "torch", device, n=n, dtype=dtype, layout="row"),
        phases_s={"compute": compute_s, "to_device": (2e-4, 2.1e-4), "to_host": (1e-4,),
                  "end_to_end": (1.4e-3, 1.5e-3)},
        first_call_s=0.731,
        work=Work(flops=2.0 * n**3, bytes_moved=3.0 * 4 * n * n),
        check=Check(passed, 3.2e-7 if passed else 0.5, 1e-5, "" if passed else "too far off", "cuda:0"),
        warnings=("IQR is 27% of median", "ran on cpu, asked for cuda:0"),
        calls_per_sample=16, target_met=False, threads=8,
        telemetry={"power_w": [201.5, 203.0], "sm_clock_mhz": 1410, "throttled": False},
        extra={"tokens_per_s": 1234.5},
    )


def restore(store: Store, run_id: str, started_at: str, **more) -> None:
    store.restore_run(run_id, started_at=started_at, finished_at=None, status="complete",
                      accelbench_version="0.1.0", selection={}, machine=more.pop("machine", MACHINE),
                      tags={}, results=more.pop("results", ()), skips=())


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "store" / "results.sqlite") as opened:
        yield opened


# -- round trips ------------------------------------------------------------------------------


def test_measurements_round_trip_with_every_field(store):
    run_id = store.start_run(MACHINE, {"workloads": ["matmul"]}, tags={"node": "n1"})
    stored = [measurement(n) for n in (64, 128, 256)] + [measurement(512, passed=False)]
    row_ids = [store.add_result(run_id, m) for m in stored]
    assert row_ids == sorted(row_ids) and len(set(row_ids)) == 4
    assert store.results(run_id) == stored


def test_nan_and_inf_errors_of_failed_checks_survive(store):
    run_id = store.start_run(MACHINE, {})
    for error in (math.nan, math.inf):
        base = measurement(passed=False)
        store.add_result(run_id, Measurement(**{**base.__dict__, "check": Check(False, error, 1e-5)}))
    nan_back, inf_back = (m.check.max_rel_error for m in store.results(run_id))
    assert math.isnan(nan_back) and inf_back == math.inf


def test_skips_machine_and_tags_round_trip(store):
    run_id = store.start_run(MACHINE, {"backends": ["torch"]}, tags={"slurm_job_id": 4242})
    skip = Skip(Spec.make("matmul", "jax", "cuda:0", n=256, dtype="bfloat16"), "jax not installed")
    store.add_skip(run_id, skip)
    store.add_tags(run_id, {"node": "gpu17", "slurm_job_id": "4243"})
    assert store.skips(run_id) == [skip]
    assert store.machine(run_id) == MACHINE
    assert store.tags(run_id) == {"node": "gpu17", "slurm_job_id": "4243"}


def test_runs_listing_newest_first_with_counts(store):
    first = store.start_run(MACHINE, {"n": 1})
    second = store.start_run(MACHINE, {"n": 2}, tags={"node": "a"})
    store.add_result(first, measurement())
    store.add_result(first, measurement(128))
    store.add_skip(second, Skip(Spec.make("stream", "numpy", "cpu"), "no"))
    store.finish_run(first, "complete")
    newest, oldest = store.runs()
    assert (newest.id, oldest.id) == (second, first)
    assert (oldest.result_count, oldest.skip_count, oldest.status) == (2, 0, "complete")
    assert oldest.finished_at is not None and oldest.selection == {"n": 1}
    assert (newest.result_count, newest.skip_count, newest.status) == (0, 1, "running")
    assert newest.tags == {"node": "a"} and newest.hostname == "box"
    assert [r.id for r in store.runs(limit=1)] == [second]
    with pytest.raises(ValueError):
        store.finish_run(first, "done")


def test_writes_to_an_unknown_run_are_refused(store):
    with pytest.raises(UsageError, match="unknown run 'nope'"):
        store.add_result("nope", measurement())
    with pytest.raises(UsageError, match="unknown run"):
        store.results("nope")


# -- run references ---------------------------------------------------------------------------


@pytest.fixture
def three_runs(store):
    for run_id, started_at in (("20250101-000000-aaa111", "2025-01-01T00:00:00.000001+00:00"),
                               ("20250101-000000-aaa222", "2025-01-01T00:00:00.000002+00:00"),
                               ("20250102-120000-bbb333", "2025-01-02T12:00:00+00:00")):
        restore(store, run_id, started_at, results=(measurement(),))
    return store


def test_resolve_run_ids_prefixes_and_latest(three_runs):
    store = three_runs
    assert store.resolve_run("20250101-000000-aaa111") == "20250101-000000-aaa111"
    assert store.resolve_run("20250101-000000-aaa2") == "20250101-000000-aaa222"
    assert store.resolve_run("20250102") == "20250102-120000-bbb333"
    assert store.resolve_run("latest") == "20250102-120000-bbb333"
    assert store.resolve_run("latest~0") == "20250102-120000-bbb333"
    assert store.resolve_run("latest~1") == "20250101-000000-aaa222"
    assert store.resolve_run("latest~2") == "20250101-000000-aaa111"


def test_resolve_run_ambiguous_and_unknown_list_candidates(three_runs):
    store = three_runs
    with pytest.raises(UsageError) as ambiguous:
        store.resolve_run("20250101")
    assert "ambiguous" in str(ambiguous.value)
    assert "20250101-000000-aaa111" in str(ambiguous.value) and "aaa222" in str(ambiguous.value)
    with pytest.raises(UsageError) as unknown:
        store.resolve_run("zzz")
    assert "unknown run 'zzz'" in str(unknown.value) and "20250102-120000-bbb333" in str(unknown.value)
    with pytest.raises(UsageError, match="holds 3 run"):
        store.resolve_run("latest~3")
    with pytest.raises(UsageError, match="latest~N"):
        store.resolve_run("latest~x")
    with pytest.raises(UsageError):
        store.resolve_run("")


def test_resolve_latest_in_an_empty_store(store):
    with pytest.raises(UsageError, match="no runs are stored"):
        store.resolve_run("latest")


# -- measured ceilings ------------------------------------------------------------------------


H100 = Device("cuda:0", "gpu", "NVIDIA", "H100", "test",
              peaks=(PeakFigure("fp32", 67e12, "table", "datasheet"), PeakFigure("fp64", 34e12, "table", "datasheet"),
                     PeakFigure("memory_bandwidth", 3.35e12, "table", "datasheet")))


def test_ceilings_come_only_from_trusted_local_builtin_plausible_results(store):
    import dataclasses

    run_id = store.start_run(MACHINE, {})
    slow, fast_wrong = measurement(256), measurement(256, passed=False, compute_s=(1e-6,) * 3)
    fast_f64 = measurement(256, "float64", compute_s=(2e-3, 2e-3, 4e-3))
    stream = measurement(workload="stream", compute_s=(1e-3, 2e-3, 3e-3))
    noisy = dataclasses.replace(measurement(256, compute_s=(1e-4,) * 3), verdict="noisy")
    plugin = dataclasses.replace(measurement(256, compute_s=(1e-4,) * 3),
                                 spec=Spec.make("matmul", "someplugin", "cuda:0", n=256, dtype="float32"))
    impossible = measurement(4096, compute_s=(1e-6,) * 3)  # 137 PFLOP/s on an H100: not a ceiling
    for m in (slow, fast_wrong, fast_f64, stream, noisy, plugin, impossible):
        store.add_result(run_id, m)
    other = store.start_run({**MACHINE, "hostname": "elsewhere"}, {})
    store.add_result(other, measurement(256, compute_s=(1e-4,)))
    restore(store, "20250101-000000-imported", "2025-01-01T00:00:00+00:00",
            results=[measurement(256, compute_s=(1e-4,))])  # imported into this host's database

    best = stored_ceilings(store, "box", {"cuda:0": H100})
    f32 = best[("cuda:0", "fp32")]
    assert f32.value == pytest.approx(slow.work.flops / 1.025e-3) and f32.spec == slow.spec
    assert f32.run_id == run_id
    assert best[("cuda:0", "fp64")].value == pytest.approx(fast_f64.work.flops / 2e-3)
    assert best[("cuda:0", "memory_bandwidth")].value == pytest.approx(stream.work.bytes_moved / 2e-3)
    assert stored_ceilings(store, "elsewhere", {"cuda:0": H100})[("cuda:0", "fp32")].run_id == other
    assert stored_ceilings(store, "nobody", {}) == {}

    assert store.forget_ceilings("box", "cuda:0") == 8  # every result stored for this host and device
    assert stored_ceilings(store, "box", {"cuda:0": H100}) == {}
    assert len(store.results(run_id)) == 7  # forgotten as ceilings, still stored


# -- opening ----------------------------------------------------------------------------------


def test_wal_mode_and_foreign_keys_are_on(tmp_path):
    path = tmp_path / "wal.sqlite"
    with Store(path) as store:
        assert store.journal_mode == "wal" and store.schema_version == schema.CURRENT_VERSION
        assert store._conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # persisted in the file
    conn.close()


def test_unwritable_path_is_a_usage_error_naming_it(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    target = blocker / "results.sqlite"
    with pytest.raises(UsageError) as error:
        Store(target)
    assert str(target) in str(error.value) and "accepted" in str(error.value)
    assert f"{blocker} is a file, not a folder" in str(error.value)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may write anywhere")
def test_read_only_folder_is_a_usage_error_naming_the_path(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        with pytest.raises(UsageError) as error:
            Store(locked / "sub" / "results.sqlite")
        assert str(locked / "sub" / "results.sqlite") in str(error.value)
    finally:
        locked.chmod(0o700)


def test_directory_as_database_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="cannot open"):
        Store(tmp_path)


@pytest.mark.parametrize("content", [b"this is not a database at all" * 100,
                                     b"SQLite format 3\x00" + b"\xff" * 4080])
def test_corrupt_file_is_a_usage_error_naming_it(tmp_path, content):
    path = tmp_path / "broken.sqlite"
    path.write_bytes(content)
    with pytest.raises(UsageError) as error:
        Store(path)
    assert str(path) in str(error.value) and "accepted" in str(error.value)


def test_damage_found_after_opening_is_a_usage_error(tmp_path):
    path = tmp_path / "damaged.sqlite"
    with Store(path) as store:
        run_id = store.start_run(MACHINE, {})
        for n in range(40):
            store.add_result(run_id, measurement(n + 1))
    page_bytes = 4096
    data = bytearray(path.read_bytes())  # closing checkpointed the WAL into this file
    data[2 * page_bytes:] = b"\xa5" * (len(data) - 2 * page_bytes)  # keep the schema page only
    path.write_bytes(bytes(data))
    with pytest.raises(UsageError) as error:
        with Store(path) as damaged:
            damaged.results(run_id)
    assert str(path) in str(error.value)


def test_foreign_and_newer_databases_are_refused(tmp_path):
    foreign = tmp_path / "foreign.sqlite"
    conn = sqlite3.connect(foreign)
    conn.execute("CREATE TABLE invoices (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(UsageError, match="something else"):
        Store(foreign)
    newer = tmp_path / "newer.sqlite"
    Store(newer).close()
    conn = sqlite3.connect(newer)
    conn.execute("INSERT INTO schema_version VALUES (99, 'future')")
    conn.commit()
    conn.close()
    with pytest.raises(UsageError, match="newer accelbench"):
        Store(newer)


# -- migration --------------------------------------------------------------------------------


@pytest.fixture
def v1_copy(data_dir, tmp_path):
    frozen = data_dir / "db" / "v1.sqlite"
    assert frozen.exists(), ("tests/data/db/v1.sqlite is missing; note that .gitignore ignores "
                             "*.sqlite, so it must be committed with `git add -f`")
    return shutil.copy(frozen, tmp_path / "old.sqlite")


def _layout(path) -> dict[str, list]:
    conn = sqlite3.connect(path)
    tables = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    layout = {t: [tuple(c[1:]) for c in conn.execute(f"PRAGMA table_info({t})")] for t in tables}
    layout["indexes"] = [r[0] for r in conn.execute(
        "SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")]
    conn.close()
    return layout


def test_frozen_v1_file_matches_migration_1(v1_copy, tmp_path):
    fresh = sqlite3.connect(tmp_path / "v1-fresh.sqlite")
    for statement in schema.MIGRATIONS[1]:
        fresh.execute(statement)
    fresh.close()
    assert _layout(v1_copy) == _layout(tmp_path / "v1-fresh.sqlite")


def test_v1_database_migrates_to_current_keeping_its_data(v1_copy, tmp_path):
    with Store(v1_copy) as store:
        assert (store.migrated_from, store.schema_version) == (1, schema.CURRENT_VERSION)
        assert [r.id for r in store.runs()] == [V1_RUN_INTERRUPTED, V1_RUN_COMPLETE]
        complete = store.run_info(V1_RUN_COMPLETE)
        assert (complete.status, complete.result_count, complete.skip_count) == ("complete", 3, 1)
        first = store.results(V1_RUN_COMPLETE)[0]
        assert first.spec == Spec.make("matmul", "numpy", "cpu", n=1024, dtype="float32")
        assert first.samples_s == (0.010, 0.011, 0.012) and first.telemetry == {}
        assert first.warnings == ("IQR is 9% of median",) and first.threads == 4
        wrong = store.results(V1_RUN_INTERRUPTED)[1]
        assert not wrong.valid and math.isnan(wrong.check.max_rel_error)
        assert store.skips(V1_RUN_COMPLETE)[0].reason == "torch not installed"
        assert store.machine(V1_RUN_COMPLETE)["software"] == {"numpy": "1.26.4"}
        assert not [k for k in stored_ceilings(store, "", {}) if k[0] == "cpu"]  # failed check ignored
        store.add_tags(V1_RUN_COMPLETE, {"node": "oldbox"})  # a v2 feature on old data
        assert store.tags(V1_RUN_COMPLETE) == {"node": "oldbox"}
    conn = sqlite3.connect(v1_copy)
    assert [r[0] for r in conn.execute("SELECT version FROM schema_version ORDER BY version")] == \
        list(range(1, schema.CURRENT_VERSION + 1))
    conn.close()
    Store(tmp_path / "fresh.sqlite").close()
    assert _layout(v1_copy) == _layout(tmp_path / "fresh.sqlite")  # upgraded == created new


def test_failed_migration_leaves_the_file_unchanged(v1_copy, monkeypatch):
    broken = schema.MIGRATIONS[2] + ("ALTER TABLE no_such_table ADD COLUMN x TEXT",)
    monkeypatch.setitem(schema.MIGRATIONS, 2, broken)
    with pytest.raises(UsageError, match="left unchanged"):
        Store(v1_copy)
    conn = sqlite3.connect(v1_copy)
    assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == 1
    assert "telemetry_json" not in [c[1] for c in conn.execute("PRAGMA table_info(results)")]
    assert conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 5
    conn.close()


# -- export and import ------------------------------------------------------------------------


def _filled_store(path) -> tuple[Store, list[str]]:
    store = Store(path)
    first = store.start_run(MACHINE, {"workloads": ["matmul"]}, tags={"node": "n1"})
    for n in (64, 128):
        store.add_result(first, measurement(n))
    store.add_result(first, measurement(256, passed=False))
    store.add_skip(first, Skip(Spec.make("matmul", "jax", "cpu", n=64), "jax not installed"))
    store.finish_run(first, "complete")
    second = store.start_run(MACHINE, {}, tags={"slurm_job_id": "77"})
    store.add_result(second, measurement(512))
    return store, [first, second]


def test_export_then_import_gives_identical_runs(tmp_path):
    source, run_ids = _filled_store(tmp_path / "a.sqlite")
    write_json(tmp_path / "out.json", export_runs(source, ["latest~1", "latest"]))
    with Store(tmp_path / "b.sqlite") as target:
        added = import_document(target, read_json(tmp_path / "out.json"), source="out.json")
        assert added == run_ids
        for run_id in run_ids:
            assert target.results(run_id) == source.results(run_id)
            assert target.skips(run_id) == source.skips(run_id)
            assert target.machine(run_id) == source.machine(run_id)
            assert target.tags(run_id) == source.tags(run_id)
            assert target.run_info(run_id) == source.run_info(run_id)
    source.close()


def test_reimport_does_not_duplicate_and_adds_tags_to_new_runs(tmp_path):
    source, run_ids = _filled_store(tmp_path / "a.sqlite")
    doc = export_runs(source, run_ids)
    source.close()
    with Store(tmp_path / "b.sqlite") as target:
        assert import_document(target, doc, tags={"imported_from": "a"}) == run_ids
        assert import_document(target, doc, tags={"imported_from": "again"}) == []
        assert len(target.runs()) == 2 and len(target.results(run_ids[0])) == 3
        assert target.tags(run_ids[0]) == {"node": "n1", "imported_from": "a"}


def test_export_keeps_a_nan_error_as_text(tmp_path, store):
    run_id = store.start_run(MACHINE, {})
    base = measurement(passed=False)
    store.add_result(run_id, Measurement(**{**base.__dict__, "check": Check(False, math.nan, 1e-5),
                                            "telemetry": {"power_w": math.nan}}))
    doc = export_runs(store, [run_id])
    assert doc["runs"][0]["results"][0]["check"]["max_rel_error"] == "nan"
    write_json(tmp_path / "nan.json", doc)  # plain JSON: would fail on a NaN token
    with Store(tmp_path / "other.sqlite") as other:
        import_document(other, read_json(tmp_path / "nan.json"))
        back = other.results(run_id)[0]
        assert math.isnan(back.check.max_rel_error) and back.telemetry == {"power_w": None}


def _set(doc, dotted, value):
    *parents, last = dotted
    for key in parents:
        doc = doc[key]
    doc[last] = value


@pytest.mark.parametrize("where, value, message", [
    (("runs", 0, "results", 1, "phases_s", "compute", 2), "x",
     'runs[0].results[1].phases_s.compute[2]: expected a number, got "x"'),
    (("runs", 0, "results", 0, "phases_s", "compute", 0), math.inf,
     "runs[0].results[0].phases_s.compute[0]: expected a finite number"),
    (("runs", 0, "results", 0, "work", "flops"), 10**400, "runs[0].results[0].work.flops: expected a finite number"),
    (("runs", 0, "results", 0, "phases_s", "warmup"), [1.0],
     "runs[0].results[0].phases_s.warmup: unknown phase"),
    (("runs", 0, "results", 0, "check", "passed"), "yes",
     'runs[0].results[0].check.passed: expected true or false, got "yes"'),
    (("runs", 0, "results", 0, "first_call_s"), -1, "runs[0].results[0].first_call_s: expected a number >= 0"),
    (("runs", 0, "results", 0, "calls_per_sample"), 0, "runs[0].results[0].calls_per_sample"),
    (("runs", 0, "results", 0, "spec", "workload"), "", "runs[0].results[0].spec.workload"),
    (("runs", 0, "results", 0, "spec", "params", "device"), "cpu", "runs[0].results[0].spec.params.device"),
    (("runs", 0, "results", 0, "extra", "f"), (lambda: 0), "runs[0].results[0].extra.f: expected a JSON value"),
    (("runs", 0, "results", 0, "chek"), {}, "runs[0].results[0].chek: unknown field"),
    (("runs", 0, "skips", 0, "reason"), 3, "runs[0].skips[0].reason: expected a string, got 3"),
    (("runs", 0, "status"), "done", "runs[0].status: expected"),
    (("runs", 0, "started_at"), "yesterday", "runs[0].started_at: expected an ISO 8601 time"),
    (("runs", 0, "id"), "../../etc", "runs[0].id: expected a run id"),
    (("runs", 0, "tags", "node"), 17, "runs[0].tags.node: expected a string, got 17"),
    (("runs", 0, "machine"), [], "runs[0].machine: expected an object, got []"),
    (("format",), "other-tool", 'format: expected "accelbench-results", got "other-tool"'),
    (("format_version",), 99, "format_version: this accelbench reads version 1, got 99"),
    (("runs",), {}, "runs: expected a list"),
])
def test_import_validation_names_the_bad_field(tmp_path, where, value, message):
    source, run_ids = _filled_store(tmp_path / "a.sqlite")
    doc = export_runs(source, run_ids)
    source.close()
    _set(doc, where, value)
    with Store(tmp_path / "b.sqlite") as target:
        with pytest.raises(UsageError) as error:
            import_document(target, doc, source="shared.json")
        assert str(error.value).startswith("shared.json: " + message), str(error.value)
        assert target.runs() == []  # nothing written before the whole document passed


def test_import_refuses_missing_fields_duplicates_and_non_documents(tmp_path, store):
    source, run_ids = _filled_store(tmp_path / "a.sqlite")
    doc = export_runs(source, run_ids)
    source.close()
    missing = copy.deepcopy(doc)
    del missing["runs"][1]["results"][0]["check"]
    with pytest.raises(UsageError, match=r"^runs\[1\]\.results\[0\]\.check: missing"):
        import_document(store, missing)
    twice = copy.deepcopy(doc)
    twice["runs"][1] = copy.deepcopy(twice["runs"][0])
    with pytest.raises(UsageError, match=r"runs\[1\]\.id: .*appears twice"):
        import_document(store, twice)
    with pytest.raises(UsageError, match=r"^\(top level\): expected an object"):
        import_document(store, [1, 2])
    with pytest.raises(UsageError, match="^format: missing"):
        import_document(store, {"runs": []})


def test_read_json_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"runs": [1, 2,]}')
    with pytest.raises(UsageError, match=r"bad\.json: not valid JSON \(line 1"):
        read_json(bad)
    bad.write_text('{"x": NaN}')
    with pytest.raises(UsageError, match="NaN is not a number"):
        read_json(bad)
    with pytest.raises(UsageError, match="cannot read .*missing.json"):
        read_json(tmp_path / "missing.json")
    with pytest.raises(UsageError, match="cannot write"):
        write_json(tmp_path / "no-folder" / "x.json", {})
    write_json(tmp_path / "ok.json", {"a": [1, 2.5]})
    assert read_json(tmp_path / "ok.json") == {"a": [1, 2.5]}
    assert [p.name for p in tmp_path.iterdir() if p.suffix == ".tmp"] == []  # temp file renamed


# -- where the database lives -----------------------------------------------------------------


def test_database_path_precedence(tmp_path):
    env = {"HOME": "/home/ada", "ACCELBENCH_DB": str(tmp_path / "env.sqlite")}
    assert resolve_db_path(tmp_path / "x.sqlite", env) == tmp_path / "x.sqlite"
    assert resolve_db_path(None, env) == tmp_path / "env.sqlite"
    assert resolve_db_path(None, {**env, "ACCELBENCH_DB": ""}, "linux") == default_db_path(env, "linux")


@pytest.mark.parametrize("platform, env, expected", [
    ("linux", {"HOME": "/home/ada"}, "/home/ada/.local/share/accelbench/results.sqlite"),
    ("linux", {"HOME": "/home/ada", "XDG_DATA_HOME": "/data"}, "/data/accelbench/results.sqlite"),
    ("linux", {"HOME": "/home/ada", "XDG_DATA_HOME": "rel"}, "/home/ada/.local/share/accelbench/results.sqlite"),
    ("darwin", {"HOME": "/Users/ada"}, "/Users/ada/Library/Application Support/accelbench/results.sqlite"),
    ("win32", {"LOCALAPPDATA": "C:/Users/ada/AppData/Local"},
     "C:/Users/ada/AppData/Local/accelbench/results.sqlite"),
])
def test_default_database_path_per_platform(platform, env, expected):
    assert default_db_path(env, platform).as_posix() == expected


def test_a_run_is_found_by_a_unique_suffix_and_latest_skips_runs_that_measured_nothing(store):
    restore(store, "20261202-100000-abc123", "2026-12-02T10:00:00+00:00", results=(measurement(),))
    restore(store, "20261202-110000-def456", "2026-12-02T11:00:00+00:00")  # skips only
    assert store.resolve_run("abc123") == "20261202-100000-abc123"
    assert store.resolve_run("def456") == "20261202-110000-def456"
    assert store.resolve_run("latest") == "20261202-100000-abc123"  # stored, but not the answer
    with pytest.raises(UsageError, match="prefix or suffix"):
        store.resolve_run("zzz999")
