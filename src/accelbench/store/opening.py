"""Opening the results database: is the file an accelbench database, and which schema version?

A file at the database path may belong to another program. It is identified read-only (its
header, then sqlite_master through a read-only connection that creates no -wal/-shm files), so
a file that is not ours is left byte-for-byte as it was. A new database is built under a
temporary name and linked into place, so no half-made file is ever left at the path, and a file
that exists is never taken over. An older accelbench database is copied (sqlite3's backup API,
so pages still in its WAL are included) before it is upgraded.
"""
from __future__ import annotations

import os
import secrets
import sqlite3
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from accelbench.errors import UsageError
from accelbench.store import recovery
from accelbench.store.paths import ENV_VAR
from accelbench.store.schema import CURRENT_VERSION, SchemaError, migrate, read_version

SQLITE_MAGIC = b"SQLite format 3\x00"
_WAL_MODE = 2  # header bytes 18 and 19 (file format write/read version): 1 rollback journal, 2 WAL
_V1_TABLES = {"schema_version", "runs", "machines", "results", "skips"}  # every accelbench database
ACCEPTED = (f"accepted: an accelbench results database (SQLite), or a new file in a writable "
            f"directory; choose another path or set {ENV_VAR}")


class NoDatabaseError(UsageError):
    """A read-only command was pointed at a path where no results database exists."""


@dataclass
class Opened:
    conn: sqlite3.Connection
    migrated_from: int
    schema_version: int
    journal_mode: str


def print_notice(message: str) -> None:
    print(message, file=sys.stderr)


def open_database(path: Path, *, create: bool, busy_timeout_s: float,
                  notify: Callable[[str], None] | None = None) -> Opened:
    """Identify the file read-only, then create it, or back it up and upgrade it, and open it.

    `create=False` (the read-only commands): nothing at `path` is a NoDatabaseError, and no
    file or folder is made. `notify` gets the one-line notice of an upgrade (default: stderr).
    Every refusal is a UsageError naming the path; a refused file is left unchanged.
    """
    version = _identified(path)
    if version is None:
        if not create:
            raise NoDatabaseError(f"no runs are stored in {path}: no results database is there "
                                  f"(`accelbench run` makes one; --db or {ENV_VAR} chooses another)")
        version = _create(path)
    if version < CURRENT_VERSION:
        backup = _backup_before_upgrade(path, version)
        (notify or print_notice)(f"accelbench: upgrading results database {path} from schema "
                                 f"version {version} to {CURRENT_VERSION}; the old one is kept as {backup}")
    conn = _connect(path, busy_timeout_s, writable=create or _may_write(path))
    try:
        # a current file is only read here: a reader never takes the write lock (BEGIN IMMEDIATE)
        start, current = migrate(conn) if version < CURRENT_VERSION else (version, version)
        return Opened(conn, start, current, _journal_mode(conn, wal=create))
    except SchemaError as exc:
        conn.close()
        raise UsageError(f"cannot use {path} as a results database: {exc}; {ACCEPTED}") from None
    except sqlite3.Error as exc:
        conn.close()
        raise UsageError(f"cannot use {path} as a results database: {exc} "
                         f"(the file was left unchanged); {ACCEPTED}") from None


def _journal_mode(conn: sqlite3.Connection, wal: bool) -> str:
    mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0]).lower()
    if wal and mode != "wal":  # now that the file is known to be ours and current: WAL is persistent
        mode = str(conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]).lower()
    return mode


def _may_write(path: Path) -> bool:
    """False on read-only media or without permission: such a file is opened read-only."""
    try:
        read_only_fs = bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):
        read_only_fs = False
    return not read_only_fs and os.access(path, os.W_OK)


def _identified(path: Path) -> int | None:
    try:
        return identify(path)
    except SchemaError as exc:
        raise UsageError(f"cannot open results database {path}: {exc} (left unchanged); "
                         f"{ACCEPTED}") from None


def _create(path: Path) -> int:
    """Make a new database at `path` (and its folder); returns the schema version found there."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocker = next((p for p in path.parents if p.exists() and not p.is_dir()), None)
        reason = f"{blocker} is a file, not a folder" if blocker else (exc.strerror or str(exc))
        raise UsageError(f"cannot create the folder for results database {path}: {reason}; "
                         f"{ACCEPTED}") from None

    def build(conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA journal_mode = WAL")
        migrate(conn)
    try:
        if create_new(path, build):
            return CURRENT_VERSION
    except (OSError, sqlite3.Error) as exc:
        raise UsageError(f"cannot open results database {path}: cannot create it: "
                         f"{getattr(exc, 'strerror', None) or exc}; {ACCEPTED}") from None
    version = _identified(path)  # another process made it meanwhile: use it if it is ours
    return CURRENT_VERSION if version is None else version


def _backup_before_upgrade(path: Path, version: int) -> Path:
    try:
        return keep_backup(path, version)
    except (OSError, sqlite3.Error) as exc:
        raise UsageError(f"{path} is an older accelbench database (schema version {version}), "
                         f"upgraded only once a backup copy is kept beside it, and that failed: "
                         f"{getattr(exc, 'strerror', None) or exc} (the file was left unchanged); "
                         f"accepted: a folder with room and write permission for the copy") from None


def _connect(path: Path, busy_timeout_s: float, writable: bool = True) -> sqlite3.Connection:
    conn = None
    try:
        # isolation_level=None: we issue BEGIN/COMMIT ourselves, one transaction per write
        conn = sqlite3.connect(_read_only_uri(path) if not writable else path, timeout=busy_timeout_s,
                               isolation_level=None, uri=not writable)
        conn.row_factory = sqlite3.Row
        conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # not a database? fail here
        conn.execute("PRAGMA foreign_keys = ON")
        # FULL: fsync each commit; a result costs seconds to measure, a sync milliseconds
        conn.execute("PRAGMA synchronous = FULL")
        return conn
    except sqlite3.Error as exc:
        if conn is not None:
            conn.close()
        raise UsageError(f"cannot open results database {path}: {exc}; {ACCEPTED}") from None


def identify(path: Path) -> int | None:
    """None when nothing is at `path`; else the schema version of the accelbench database there.

    Raises SchemaError (message says what the file is) for anything else: a folder, an empty
    file, a file that is not SQLite, a damaged one, an SQLite database of another program or one
    with no tables, or one written by a newer accelbench. Nothing is written in any case.
    """
    if not os.path.lexists(path):
        return None
    if path.is_dir():
        raise SchemaError("it is a folder, not a file")
    if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO would block the open below forever
        raise SchemaError("it is not a regular file (a FIFO, device or socket)")
    try:
        with open(path, "rb") as handle:
            header = handle.read(100)
    except OSError as exc:
        raise SchemaError(f"cannot read it: {exc.strerror or exc}") from None
    if not header:
        raise SchemaError("it is an empty file (0 bytes); accelbench creates its database only "
                          "where no file exists: remove it or choose a new path")
    if not header.startswith(SQLITE_MAGIC) or len(header) < 100:
        raise SchemaError("it is not an SQLite database")
    version = _read_version_read_only(path, wal=header[18] == _WAL_MODE)
    if version == 0:
        raise SchemaError("it is an SQLite database with no tables, not one accelbench made")
    if version > CURRENT_VERSION:
        raise SchemaError(f"it was written by a newer accelbench (schema version {version}; "
                          f"this one reads up to {CURRENT_VERSION}): upgrade accelbench")
    return version


def _read_only_uri(path: Path, wal: bool | None = None) -> str:
    # mode=ro alone still creates -wal and -shm beside a WAL-mode file (and cannot, on read-only
    # media); immutable=1 does not, and is exact while no -wal file exists (every committed page
    # is then in the main file)
    wal = _wal_header(path) if wal is None else wal
    sidecars = all(Path(f"{path}-{suffix}").exists() for suffix in ("wal", "shm"))
    no_log = not recovery.leftover(path)
    query = "mode=ro&immutable=1" if wal and not sidecars and no_log else "mode=ro"
    return f"{path.absolute().as_uri()}?{query}"


def _wal_header(path: Path) -> bool:
    try:
        with open(path, "rb") as handle:
            return handle.read(20)[18:19] == bytes([_WAL_MODE])
    except OSError:
        return False


def _read_version_read_only(path: Path, wal: bool) -> int:
    try:
        return recovery.waited(path, lambda: _read_version(path, _read_only_uri(path, wal)))
    except sqlite3.OperationalError as exc:
        if not recovery.needs_recovery(exc, path):
            raise SchemaError(f"cannot read it as a database: {exc}") from None
    # a crash left a journal or log: ours? (immutable=1 reads the main file alone, writes nothing)
    version = _read_version(path, f"{path.absolute().as_uri()}?mode=ro&immutable=1")
    recovery.recover(path)
    return recovery.waited(path, lambda: _read_version(path, _read_only_uri(path, wal))) or version


def _read_version(path: Path, uri: str) -> int:
    conn = None
    try:
        conn = sqlite3.connect(uri, uri=True, timeout=recovery.POLL_S)
        version = read_version(conn)
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if version and not _V1_TABLES <= tables:  # another program's own schema_version table
            raise SchemaError(f"it is an SQLite database of something else (it has a schema_version "
                              f"table but not accelbench's {', '.join(sorted(_V1_TABLES - tables))})")
        return version
    except sqlite3.OperationalError as exc:
        if recovery.is_locked(exc) or recovery.needs_recovery(exc, path):
            raise  # waited for, or recovered, by the caller
        raise SchemaError(f"cannot read it as a database: {exc}") from None
    except sqlite3.DatabaseError as exc:
        hint = " (damaged: restore it from a backup or an export file)" if (
            "malformed" in str(exc) or "not a database" in str(exc)) else ""
        raise SchemaError(f"cannot read it as a database: {exc}{hint}") from None
    finally:
        if conn is not None:
            conn.close()


def backup_path(path: Path, version: int) -> Path:
    """`results.sqlite.v1-backup`, or `...v1-backup-2` and so on when that name is taken."""
    candidate = path.with_name(f"{path.name}.v{version}-backup")
    number = 2
    while os.path.lexists(candidate):
        candidate = path.with_name(f"{path.name}.v{version}-backup-{number}")
        number += 1
    return candidate


def keep_backup(path: Path, version: int) -> Path:
    """Copy the database at `path` to a new backup file next to it; returns the backup's path."""
    target = backup_path(path, version)
    partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
    source = destination = None
    try:
        source = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True)
        destination = sqlite3.connect(partial)
        source.backup(destination)
        destination.close()
        destination = None
        os.replace(partial, target)  # a backup under its final name is always whole
        return target
    finally:
        for conn in (source, destination):
            if conn is not None:
                conn.close()
        for leftover in (partial, Path(f"{partial}-journal")):
            if leftover.exists():
                leftover.unlink()


def create_new(path: Path, build: Callable[[sqlite3.Connection], None]) -> bool:
    """Build a database under a temporary name beside `path`, then link it in if `path` is still free.

    Returns False (and builds nothing there) when another process created `path` first.
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.creating")
    conn = sqlite3.connect(temporary, isolation_level=None)
    try:
        build(conn)
        conn.close()  # checkpoints and removes its -wal: the file alone is the database
        try:
            os.link(temporary, path)  # fails if the path exists: never replaces anything
        except FileExistsError:
            return False
        except OSError:  # a filesystem without hard links
            if os.path.lexists(path):
                return False
            os.replace(temporary, path)
        return True
    finally:
        conn.close()
        for leftover in (temporary, *(Path(f"{temporary}-{s}") for s in ("wal", "shm", "journal"))):
            if os.path.lexists(leftover):
                os.unlink(leftover)
