"""Opening after a crash, and while another process writes.

A write cut short (a kill, a crash, a full disk) leaves a hot rollback journal, or a WAL with no
index. A read-only connection cannot roll a journal back, so every later read-only open would be
refused: recovery is part of opening. It happens only once the file is known to be ours (read
with immutable=1, which looks at nothing but the main file), through a connection that may write.

A lock held by another process is waited for a bounded time, and the wait says who holds it
(/proc/locks names the process holding SQLite's byte-range locks on the file).
"""
from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from accelbench.errors import UsageError

T = TypeVar("T")
LOCK_WAIT_S = 30.0      # then give up, naming the holder
POLL_S = 0.1
SIDECARS = ("journal", "wal")


def leftover(path: Path) -> Path | None:
    """A non-empty -journal or -wal beside `path` (what a crash leaves), else None."""
    for suffix in SIDECARS:
        candidate = Path(f"{path}-{suffix}")
        try:
            if candidate.stat().st_size > 0:
                return candidate
        except OSError:
            continue
    return None


def needs_recovery(exc: BaseException, path: Path) -> bool:
    """A read-only open refused because SQLite must first write (roll back, rebuild the WAL index)."""
    text = str(exc)
    return ("readonly" in text or "unable to open" in text) and leftover(path) is not None


def recover(path: Path) -> None:
    """Roll a hot journal back (or rebuild the WAL index): SQLite does it on the first read of a
    connection that may write. Where this process may not write, the message says what to run."""
    left = leftover(path)
    conn = None
    try:
        conn = sqlite3.connect(f"{path.absolute().as_uri()}?mode=rw", uri=True, timeout=LOCK_WAIT_S,
                               isolation_level=None)
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
    except sqlite3.Error as exc:
        name = left.name if left else f"{path.name}-journal"
        raise UsageError(
            f"results database {path}: a write cut short (a crash or a kill) left {name}, which SQLite "
            f"must roll back before the file can be read, and this process may not write there ({exc}); "
            f"run `accelbench runs --db {path}` once as a user who may write to {path} and its folder "
            f"(or copy both files to a writable folder and open the copy)") from None
    finally:
        if conn is not None:
            conn.close()


def is_locked(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


def waited(path: Path, attempt: Callable[[], T], notify: Callable[[str], None] | None = None,
           limit_s: float = LOCK_WAIT_S) -> T:
    """`attempt()` (itself quick to give up on a lock), again until it gets through or `limit_s`
    pass; the first wait is announced with who holds the lock, never silent."""
    deadline = time.monotonic() + limit_s
    told = False
    while True:
        try:
            return attempt()
        except sqlite3.OperationalError as exc:
            if not is_locked(exc):
                raise
            if time.monotonic() >= deadline:
                raise UsageError(f"results database {path} is still locked after {limit_s:g} s by "
                                 f"{holders(path)}; try again once it has finished") from None
            if not told:
                (notify or _stderr)(f"accelbench: results database {path} is locked by {holders(path)}; "
                                    f"waiting up to {limit_s:g} s")
                told = True
            time.sleep(POLL_S)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr)


def holders(path: Path) -> str:
    """Who holds a lock on the database or its sidecars: "pid 12 (accelbench import a.json)"."""
    pids = sorted(set(_locking_pids(path)) - {os.getpid()})
    if not pids:
        return "another process"
    return ", ".join(f"pid {pid} ({_command(pid)})" for pid in pids[:3])


def _locking_pids(path: Path) -> list[int]:
    files = set()
    for candidate in (path, *(Path(f"{path}-{s}") for s in ("shm", "journal", "wal"))):
        try:
            st = candidate.stat()
        except OSError:
            continue
        files.add((os.major(st.st_dev), os.minor(st.st_dev), st.st_ino))
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:  # not Linux
        return []
    pids = []
    for line in lines:
        fields = [f for f in line.split() if f != "->"]
        try:
            pid, (major, minor, inode) = int(fields[4]), fields[5].split(":")
            if pid > 0 and (int(major, 16), int(minor, 16), int(inode)) in files:
                pids.append(pid)
        except (IndexError, ValueError):
            continue
    return pids


def _command(pid: int) -> str:
    try:
        words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return "gone"
    text = " ".join(" ".join(w.decode(errors="backslashreplace").split()) for w in words if w)
    return text[:100] or "unknown"
