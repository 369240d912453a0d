"""Files at the --db path that are not accelbench databases stay byte-for-byte as they were, with
no -wal/-shm beside them, under every command that takes --db; older accelbench databases are
upgraded only after a backup copy and a one-line notice; read-only commands create nothing."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from accelbench.cli.main import main
from accelbench.store import schema
from accelbench.store.db import Store

V1 = Path(__file__).parents[1] / "data" / "db" / "v1.sqlite"


# -- foreign files, each made by a real SQLite (or not SQLite at all) ---------------------------


def _sqlite(path: Path, *statements: str, wal: bool = False) -> None:
    conn = sqlite3.connect(path)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    conn.close()


FOREIGN = {
    "other tables": lambda p: _sqlite(p, "CREATE TABLE invoices (id INTEGER, total REAL)",
                                      "INSERT INTO invoices VALUES (1, 9.5)"),
    "empty schema": lambda p: _sqlite(p, "PRAGMA user_version = 7"),
    "WAL-mode, other tables": lambda p: _sqlite(p, "CREATE TABLE notes (body TEXT)",
                                                "INSERT INTO notes VALUES ('keep me')", wal=True),
    "own schema_version table": lambda p: _sqlite(p, "CREATE TABLE schema_version (version INTEGER)",
                                                  "INSERT INTO schema_version VALUES (1)"),
    "newer accelbench": lambda p: (shutil.copy(V1, p), _sqlite(
        p, "INSERT INTO schema_version VALUES (99, 'the future')")),
    "not SQLite": lambda p: p.write_text("name,value\nalpha,1\n" * 200),
    "zero bytes": lambda p: p.write_bytes(b""),
    "damaged SQLite": lambda p: p.write_bytes(b"SQLite format 3\x00" + b"\xff" * 4080),
}


@pytest.fixture(scope="module")
def export_document(tmp_path_factory) -> Path:
    """A real export (of the frozen v1 runs, upgraded) for `import` and for the FILE refs."""
    folder = tmp_path_factory.mktemp("export")
    db = shutil.copy(V1, folder / "source.sqlite")
    with Store(db, notify=lambda _: None):
        pass
    assert main(["export", "latest", "-o", str(folder / "run.json"), "--db", str(db)]) == 0
    return folder / "run.json"


def _commands(db: str, tmp_path: Path, document: Path) -> dict[str, list[str]]:
    results = tmp_path / "cluster"
    results.mkdir(exist_ok=True)
    (results / "manifest.json").write_text(json.dumps(
        {"format": "accelbench-cluster-manifest", "format_version": 1, "jobs": []}))
    return {
        "run": ["run", "reduce", "--sizes", "1024", "--backend", "numpy", "--device", "cpu",
                "--no-progress", "--db", db],
        "runs": ["runs", "--db", db],
        "runs --json": ["runs", "--json", "--db", db],
        "info": ["info", "--probe", "cpu", "--db", db],
        "export": ["export", "--db", db],
        "report": ["report", "-o", str(tmp_path / "report"), "--db", db],
        "compare": ["compare", "--db", db],
        "compare --reference": ["compare", "--reference", "latest", "--db", db],
        "project": ["project", "--to", "h100", "--db", db],
        "import": ["import", str(document), "--db", db],
        "gather": ["gather", str(results), "--db", db],
        "fleet": ["fleet", str(results), "--db", db],
    }


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


@pytest.mark.parametrize("kind", list(FOREIGN))
def test_a_foreign_file_is_left_byte_for_byte_by_every_command(kind, tmp_path, export_document, capsys):
    folder = tmp_path / "theirs"
    folder.mkdir()
    path = folder / "their.db"
    FOREIGN[kind](path)
    before = _snapshot(folder)
    for name, argv in _commands(str(path), tmp_path, export_document).items():
        code = main(argv)
        err = capsys.readouterr().err
        assert _snapshot(folder) == before, f"{name} changed {kind} (or made files beside it)"
        if name == "info":  # the inventory reads measured peaks only where it can
            assert code == 0, err
            continue
        assert code == 2, f"{name} on {kind}: {code} {err}"
        assert str(path) in err and "Traceback" not in err, err
        assert len(err.strip().splitlines()) == 1, err


def test_a_live_wal_database_of_another_program_keeps_its_files(tmp_path, capsys):
    """Another program holds it open, its pages still in the -wal: we read, never write."""
    path = tmp_path / "live.db"
    theirs = sqlite3.connect(path)
    theirs.execute("PRAGMA journal_mode = WAL")
    theirs.execute("PRAGMA wal_autocheckpoint = 0")
    theirs.execute("CREATE TABLE events (at TEXT)")
    theirs.execute("INSERT INTO events VALUES ('now')")
    theirs.commit()
    try:
        main_before, wal_before = path.read_bytes(), Path(f"{path}-wal").read_bytes()
        names = sorted(os.listdir(tmp_path))
        for argv in (["runs", "--db", str(path)], ["export", "--db", str(path)]):
            assert main(argv) == 2
            assert "something else (tables: events)" in capsys.readouterr().err
        assert path.read_bytes() == main_before and Path(f"{path}-wal").read_bytes() == wal_before
        assert sorted(os.listdir(tmp_path)) == names
    finally:
        theirs.close()


# -- read-only commands on a missing database ------------------------------------------------

READERS = {
    "runs": ["runs"], "runs --json": ["runs", "--json"], "export": ["export"],
    "report": ["report", "-o", "report-out"], "compare": ["compare"],
    "compare --reference": ["compare", "--reference", "latest"], "project": ["project", "--to", "h100"],
    "info": ["info", "--probe", "cpu"], "list": ["list"],
}


@pytest.mark.parametrize("name", list(READERS))
@pytest.mark.parametrize("how", ["--db", "ACCELBENCH_DB", "user data dir"])
def test_read_only_commands_create_nothing_where_no_database_is(name, how, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    missing = tmp_path / "not" / "yet" / "results.sqlite"
    argv = list(READERS[name])
    if how == "--db" and name != "list":
        argv += ["--db", str(missing)]
    elif how == "ACCELBENCH_DB":
        monkeypatch.setenv("ACCELBENCH_DB", str(missing))
    else:
        monkeypatch.delenv("ACCELBENCH_DB")
        missing = tmp_path / "data" / "accelbench" / "results.sqlite"
    report_folder = ["report-out"] if name == "report" else []
    before = sorted(os.listdir(tmp_path))
    code = main(argv)
    out, err = capsys.readouterr()
    created = sorted(set(os.listdir(tmp_path)) - set(before) - set(report_folder))
    assert created == [] and not missing.exists() and not missing.parent.exists()
    assert "Traceback" not in err
    if name in ("info", "list"):
        assert code == 0
    elif name.startswith("runs"):
        assert code == 0 and f"no runs are stored in {missing}" in err
        assert (json.loads(out) == []) if "--json" in name else out == ""
    else:
        assert code == 2 and f"no runs are stored in {missing}" in err
        assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "report-out").exists()


# -- upgrading an older accelbench database -----------------------------------------------------


def _versions(path: Path) -> list[int]:
    conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT version FROM schema_version ORDER BY version")]
    finally:
        conn.close()


def _dump(path: Path) -> list[str]:
    conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def test_upgrading_v1_says_so_once_and_keeps_a_backup_that_still_opens_as_v1(tmp_path, capsys):
    db = shutil.copy(V1, tmp_path / "results.db")
    assert main(["runs", "--db", str(db)]) == 0
    notice = [line for line in capsys.readouterr().err.splitlines() if "upgrading" in line]
    backup = tmp_path / "results.db.v1-backup"
    expected = (f"accelbench: upgrading results database {db} from schema version 1 to "
                f"{schema.CURRENT_VERSION}; the old one is kept as {backup}")
    assert notice == [expected]
    assert _dump(backup) == _dump(V1) and _dump(Path(db)) != _dump(V1)  # the old content, whole
    assert _versions(backup) == [1] and _versions(Path(db)) == list(range(1, schema.CURRENT_VERSION + 1))
    conn = sqlite3.connect(backup)
    assert conn.execute("SELECT COUNT(*) FROM results").fetchone()[0] == 5
    conn.close()
    assert main(["runs", "--db", str(db)]) == 0  # already current: no notice, no second backup
    assert "upgrading" not in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir() if "backup" in p.name) == ["results.db.v1-backup"]


def test_the_backup_includes_pages_still_in_the_wal_and_never_replaces_an_older_backup(tmp_path):
    db = Path(shutil.copy(V1, tmp_path / "results.db"))
    (tmp_path / "results.db.v1-backup").write_text("an earlier backup, kept")
    writer = sqlite3.connect(db)  # an old accelbench still holding it open, its last run in the -wal
    writer.execute("PRAGMA journal_mode = WAL")
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("INSERT INTO runs (id, started_at, accelbench_version) VALUES ('late', 'z', '0.1')")
    writer.commit()
    notices: list[str] = []
    try:
        assert Path(f"{db}-wal").stat().st_size > 0
        with Store(db, notify=notices.append) as store:
            assert store.migrated_from == 1 and "late" in [r.id for r in store.runs()]
    finally:
        writer.close()
    second = tmp_path / "results.db.v1-backup-2"
    assert len(notices) == 1 and str(second) in notices[0]
    assert (tmp_path / "results.db.v1-backup").read_text() == "an earlier backup, kept"
    conn = sqlite3.connect(second)
    assert conn.execute("SELECT COUNT(*) FROM runs WHERE id = 'late'").fetchone()[0] == 1
    assert _versions(second) == [1]
    conn.close()


def _with_file_size_limit(argv: list[str], limit_kib: int = 4) -> subprocess.CompletedProcess:
    """A "full disk" for one process: writes past limit_kib fail with EFBIG (SIGXFSZ ignored)."""
    command = " ".join(["trap '' XFSZ;", f"ulimit -f {limit_kib};", "exec", sys.executable, "-m", "accelbench",
                        *(f"'{arg}'" for arg in argv)])
    return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120, check=False)


def test_no_room_for_the_backup_means_no_upgrade(tmp_path):
    db = Path(shutil.copy(V1, tmp_path / "results.db"))
    original = db.read_bytes()
    assert len(original) > 4096  # so the copy cannot fit under the limit
    done = _with_file_size_limit(["runs", "--db", str(db)])
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "backup" in done.stderr and "left unchanged" in done.stderr
    assert db.read_bytes() == original and _versions(db) == [1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.db"]  # no partial copy left


def test_a_new_database_appears_whole_or_not_at_all(tmp_path):
    """Made under a temporary name and linked into place: never an empty file at the path."""
    path = tmp_path / "new.sqlite"
    with Store(path) as store:
        assert store.schema_version == schema.CURRENT_VERSION and store.journal_mode == "wal"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.sqlite"]
    assert _versions(path) == list(range(1, schema.CURRENT_VERSION + 1))


# -- writing the report where it cannot be written -----------------------------------------------


@pytest.fixture
def v1_upgraded(tmp_path) -> Path:
    db = Path(shutil.copy(V1, tmp_path / "results.db"))
    Store(db, notify=lambda _: None).close()
    return db


def test_report_into_a_location_that_cannot_hold_a_folder_is_one_line(v1_upgraded, capsys):
    assert main(["report", "-o", "/proc/accelbench-report", "--db", str(v1_upgraded)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("accelbench report: error: -o /proc/accelbench-report: cannot write")


def test_report_on_a_full_filesystem_is_one_line(v1_upgraded, tmp_path):
    # 40 KiB: room for SQLite's 32 KiB -shm and the PNG figures (~22 KB), not for report.html (~65 KB)
    done = _with_file_size_limit(["report", "-o", str(tmp_path / "out"), "--db", str(v1_upgraded)],
                                 limit_kib=40)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"accelbench report: error: cannot write {tmp_path / 'out' / 'report.html'}: "), last
    assert "File too large" in last and "nothing was written under that name" in last
    assert not (tmp_path / "out" / "report.html").exists()
