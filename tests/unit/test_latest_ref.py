"""`latest` means the latest run of the command line: a run made from Python (`accelbench.run`,
`bench`) does not become the latest answer of `report`, `compare` or `export` (a real SQLite store)."""
from __future__ import annotations

from test_store import MACHINE, measurement

from accelbench.store.db import Store


def _run(store: Store, run_id: str, started_at: str, via: str | None) -> None:
    selection = {"workloads": ["matmul"], **({"via": via} if via else {})}
    store.restore_run(run_id, started_at=started_at, finished_at=None, status="complete",
                      accelbench_version="0.1.0", selection=selection, machine=MACHINE, tags={},
                      results=(measurement(),), skips=())


def test_a_python_run_does_not_become_latest(tmp_path):
    with Store(tmp_path / "r.sqlite") as store:
        _run(store, "cli-1", "2026-12-01T10:00:00Z", None)
        _run(store, "cli-2", "2026-12-01T11:00:00Z", None)
        _run(store, "py-1", "2026-12-01T12:00:00Z", "python")
        assert store.resolve_run("latest") == "cli-2"
        assert store.resolve_run("latest~1") == "cli-1"
        assert store.resolve_run("py-1") == "py-1"  # still reached by its id


def test_with_only_python_runs_latest_is_the_latest_of_those(tmp_path):
    with Store(tmp_path / "r.sqlite") as store:
        _run(store, "py-1", "2026-12-01T12:00:00Z", "python")
        _run(store, "py-2", "2026-12-01T13:00:00Z", "python")
        assert store.resolve_run("latest") == "py-2"


def test_the_python_api_records_where_a_run_came_from(tmp_path):
    import accelbench

    db = str(tmp_path / "r.sqlite")
    results = accelbench.run("matmul", sizes=[32], dtypes="float32", devices="cpu", backends="numpy", db=db)
    with Store(db) as store:
        assert store.run_info(results.run_id).selection.get("via") == "python"


def test_compare_without_runs_takes_the_two_latest_that_share_specs_and_says_which(tmp_path, capsys):
    from accelbench.cli.main import main

    db = tmp_path / "r.sqlite"
    with Store(db) as store:
        for run_id, started_at, n in (("a-256", "2026-12-01T10:00:00Z", 256), ("b-512", "2026-12-01T11:00:00Z", 512),
                                      ("c-256", "2026-12-01T12:00:00Z", 256)):
            store.restore_run(run_id, started_at=started_at, finished_at=None, status="complete",
                              accelbench_version="0.1.0", selection={}, machine=MACHINE, tags={},
                              results=(measurement(n=n),), skips=())
    assert main(["compare", "--db", str(db)]) == 0
    said = capsys.readouterr().err
    assert "latest~2 (a-256) against latest (c-256)" in said and "share specs" in said
