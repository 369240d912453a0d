"""A bulk write through a rollback journal instead of the write-ahead log, when nobody else is reading.

In WAL mode every page of an import is written twice: into the log at commit, then copied into the
database by the checkpoint (2 of the 5 s that storing 100,000 results took). With a rollback journal
an import that mostly appends writes each new page once, into the database file, and journals only
the few pages it changes: as crash-safe (synchronous FULL, a killed import is rolled back on the next
open), but readers wait while it writes, so it is used only when no other connection has the file
open: SQLite refuses to leave WAL mode otherwise, and the import stays in WAL.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def rollback_journal(conn: sqlite3.Connection) -> Iterator[bool]:
    """Yields True while `conn`'s database uses a rollback journal, False when it stayed in WAL
    (another connection is open). WAL is restored on exit; failing that, every open sets it again."""
    timeout_ms = int(conn.execute("PRAGMA busy_timeout").fetchone()[0])
    conn.execute("PRAGMA busy_timeout = 0")  # someone else is there: keep WAL at once, do not wait
    try:
        switched = str(conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0]).lower() == "delete"
    except sqlite3.OperationalError:  # "database is locked": another connection holds it
        switched = False
    finally:
        conn.execute(f"PRAGMA busy_timeout = {timeout_ms}")
    try:
        yield switched
    finally:
        if switched:
            try:
                conn.execute("PRAGMA journal_mode = WAL")
            except sqlite3.OperationalError:  # a reader arrived meanwhile: its own open sets WAL
                pass
