"""One way to open the database (docs/reliability.md): a killed import does not lock the user out,
readers never take or wait silently for the write lock, read-only media can be read, a newer
schema is refused by its version. Every case goes through the command line."""
from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from accelbench.store.db import Store

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="POSIX signals, /proc and mounts")

MACHINE = {"hostname": "node1", "os": "Linux", "python": "3.11", "inventory": {}, "software": {},
           "environment": {}}


def _cli(*args: str, timeout: float = 60, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "accelbench", *args], capture_output=True, text=True,
                          timeout=timeout, check=False, **kwargs)


def _db_with_a_run(path: Path) -> str:
    with Store(path) as store:
        return store.start_run(MACHINE, {"workloads": ["matmul"]})


# A write cut short in rollback-journal mode, as a killed bulk import leaves it: the journal is hot.
HOT = textwrap.dedent("""
    import os, signal, sqlite3, sys
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("PRAGMA cache_size = 10")  # spill to the file at once, as a big import does
    conn.execute("BEGIN IMMEDIATE")
    for i in range(3000):
        conn.execute("INSERT INTO run_tags (run_id, key, value) VALUES (?, ?, ?)",
                     (sys.argv[2], f"k{i}", "x" * 200))
    os.kill(os.getpid(), signal.SIGKILL)
""")


def _hot_journal(db: Path, run_id: str) -> None:
    child = subprocess.run([sys.executable, "-c", HOT, str(db), run_id], check=False)
    assert child.returncode == -signal.SIGKILL
    assert Path(f"{db}-journal").stat().st_size > 0


def test_a_hot_journal_left_by_a_kill_is_rolled_back_by_the_next_command(tmp_path):
    db = tmp_path / "r.sqlite"
    run_id = _db_with_a_run(db)
    _hot_journal(db, run_id)
    listed = _cli("runs", "--db", str(db), "--json")
    assert listed.returncode == 0, listed.stderr
    assert [run["id"] for run in json.loads(listed.stdout)] == [run_id]
    assert json.loads(listed.stdout)[0]["tags"] == {}  # none of the cut-short write
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_hot_journal_on_a_foreign_database_is_left_alone(tmp_path):
    db = tmp_path / "other.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE run_tags (run_id TEXT, key TEXT, value TEXT)")
    _hot_journal(db, "x")
    before = db.read_bytes(), Path(f"{db}-journal").read_bytes()
    listed = _cli("runs", "--db", str(db))
    assert listed.returncode == 2 and "something else" in listed.stderr
    assert (db.read_bytes(), Path(f"{db}-journal").read_bytes()) == before


@pytest.fixture(scope="module")
def big_export(tmp_path_factory) -> Path:
    sys.path.insert(0, str(Path(__file__).parents[1] / "unit"))
    from test_import_file import document, result

    from accelbench.store.export import write_json

    path = tmp_path_factory.mktemp("big") / "big.json"
    write_json(path, document([[result(n, samples=40) for n in range(1 + r * 2500, 1 + (r + 1) * 2500)]
                               for r in range(2)]))
    return path


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGHUP],
                         ids=["SIGKILL", "SIGTERM", "SIGHUP"])
def test_a_signal_during_import_does_not_lock_the_user_out(tmp_path, big_export, signum):
    db = tmp_path / "r.sqlite"
    run_id = _db_with_a_run(db)
    size = db.stat().st_size
    child = subprocess.Popen([sys.executable, "-m", "accelbench", "import", str(big_export), "--db", str(db)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    journal, deadline = Path(f"{db}-journal"), time.monotonic() + 60
    while child.poll() is None and time.monotonic() < deadline:
        if journal.exists() and db.stat().st_size > size + 400_000:
            child.send_signal(signum)
            break
        time.sleep(0.002)
    child.wait(timeout=60)
    assert child.returncode != 0, "the import finished before it was signalled"
    for command in (["runs", "--json"], ["export", "--all"]):
        done = _cli(*command, "--db", str(db))
        assert done.returncode == 0, done.stderr
    assert [r["id"] for r in json.loads(_cli("runs", "--json", "--db", str(db)).stdout)] == [run_id]
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_a_reader_neither_takes_nor_waits_for_the_write_lock(tmp_path):
    db = tmp_path / "r.sqlite"
    _db_with_a_run(db)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sqlite3, sys, time
        conn = sqlite3.connect({str(db)!r}, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE runs SET status = 'complete'")
        print("holding", flush=True)
        time.sleep(60)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        started = time.monotonic()
        for command in (["runs"], ["runs", "--json"], ["export", "latest"]):
            done = _cli(*command, "--db", str(db))
            assert done.returncode == 0, done.stderr
        assert time.monotonic() - started < 20  # was: 30 s each, then a failure
    finally:
        holder.kill()
        holder.wait()


def test_a_lock_that_blocks_readers_is_waited_for_and_named(tmp_path):
    db = tmp_path / "r.sqlite"
    _db_with_a_run(db)
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sqlite3, time
        conn = sqlite3.connect({str(db)!r}, isolation_level=None)
        conn.execute("PRAGMA journal_mode = DELETE")
        conn.execute("BEGIN EXCLUSIVE")
        print("holding", flush=True)
        time.sleep(2)
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        done = _cli("runs", "--db", str(db))
    finally:
        holder.wait()
    assert done.returncode == 0, done.stderr
    assert f"is locked by pid {holder.pid} (" in done.stderr and "waiting up to" in done.stderr


needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None,
                                reason="mounting a read-only filesystem needs root")


@needs_root
def test_a_database_on_read_only_media_can_be_read(tmp_path):
    media = tmp_path / "media"
    media.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(media)], check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        db = media / "r.sqlite"
        run_id = _db_with_a_run(db)
        subprocess.run(["mount", "-o", "remount,ro", str(media)], check=True)
        for command in (["runs", "--json"], ["export", "latest"]):
            done = _cli(*command, "--db", str(db))
            assert done.returncode == 0, done.stderr
            assert run_id in done.stdout
        # every command that only reads a run: compare and project load it through report/compare/sources.py
        for command in (["compare", "--reference", "latest"], ["project", "latest", "--to", "h100", "--json"],
                        ["report", "latest", "-o", str(tmp_path / "report")], ["ceilings"]):
            done = _cli(*command, "--db", str(db))
            assert done.returncode == 0 and "Traceback" not in done.stderr, (command, done.stderr)
        # the fleet view with nothing to gather only reads: it gets as far as finding no submission there
        fleet = _cli("fleet", "--json", "--db", str(db))
        assert fleet.returncode == 2 and "gathered from `accelbench submit --each-node`" in fleet.stderr, fleet.stderr
        written = _cli("import", str(tmp_path / "none.json"), "--db", str(db))
        assert written.returncode == 2 and "Traceback" not in written.stderr
    finally:
        subprocess.run(["umount", str(media)], check=False)


@needs_root
def test_a_hot_journal_that_cannot_be_rolled_back_here_says_what_to_run(tmp_path):
    media = tmp_path / "media"
    media.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(media)], check=False).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        db = media / "r.sqlite"
        _hot_journal(db, _db_with_a_run(db))
        subprocess.run(["mount", "-o", "remount,ro", str(media)], check=True)
        done = _cli("runs", "--db", str(db))
    finally:
        subprocess.run(["umount", str(media)], check=False)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert "r.sqlite-journal" in done.stderr and f"run `accelbench runs --db {db}` once" in done.stderr


def test_a_newer_schema_is_refused_naming_its_version(tmp_path):
    db = tmp_path / "r.sqlite"
    _db_with_a_run(db)
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO schema_version VALUES (99, 'the future')")
    done = _cli("runs", "--db", str(db))
    assert done.returncode == 2 and "schema version 99" in done.stderr, done.stderr
