"""The import's larger page cache lasts for its transaction only, errors included."""
from __future__ import annotations

import sqlite3

import pytest

from accelbench.store.bulk_cache import BULK_CACHE_KIB, bulk_cache


def _cache(conn: sqlite3.Connection) -> int:
    return conn.execute("PRAGMA cache_size").fetchone()[0]


def test_the_cache_is_larger_inside_and_as_before_after(tmp_path):
    conn = sqlite3.connect(tmp_path / "a.sqlite", isolation_level=None)
    conn.execute("PRAGMA cache_size = -3000")
    with bulk_cache(conn):
        assert _cache(conn) == -BULK_CACHE_KIB
    assert _cache(conn) == -3000
    with pytest.raises(RuntimeError), bulk_cache(conn):
        raise RuntimeError("the import failed")
    assert _cache(conn) == -3000
