"""A larger page cache while one transaction writes a whole import.

SQLite's default cache is 2 MB. An import of 100,000 results inserts into four indexes in spec,
device and workload order, not row order, so with the default their pages are written out to the
WAL and read back again many times within the one transaction. Memory only: what is committed,
and when, does not change (a killed import still leaves all of it or none)."""
from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager

BULK_CACHE_KIB = 256 * 1024  # at most; SQLite takes pages as it needs them


@contextmanager
def bulk_cache(conn: sqlite3.Connection) -> Iterator[None]:
    before = conn.execute("PRAGMA cache_size").fetchone()[0]
    conn.execute(f"PRAGMA cache_size = -{BULK_CACHE_KIB}")
    try:
        yield
    finally:
        conn.execute(f"PRAGMA cache_size = {int(before)}")
