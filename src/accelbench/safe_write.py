"""One way to write a file, and standard output that fails in one line (docs/reliability.md).

A file is written whole or not at all: into a new temporary file in the target's folder, flushed
and fsynced, then renamed over the final name (and the folder synced). The final name must be a
new name or a regular file: never a symbolic link (the tool did not make it, and a rename would
silently replace it), a folder, a device or a FIFO; never one of the command's own inputs (the
results database included: same device and inode). A failure (ENOSPC, EFBIG, EIO, ...) removes
the temporary file and is one UsageError line: nothing partial is ever left under a final name.
"""
from __future__ import annotations

import errno
import io
import os
import secrets
import stat
import sys
from collections.abc import Iterable
from pathlib import Path

from accelbench.errors import UsageError

PathLike = str | os.PathLike[str]


class StreamError(OSError):
    """Standard output could not be written (full disk, file-size limit, I/O error)."""


def clean_text(text: str) -> str:
    """`text` as valid UTF-8: bytes the system could not decode (argv, environment: surrogate
    escapes) come back as \\xNN, any other lone surrogate as \\udNNN; valid text is unchanged."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def clean_values(value):
    """A parsed document with every string (keys too) passed through clean_text."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean_values(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k) if isinstance(k, str) else k: clean_values(v) for k, v in value.items()}
    return value


def database_files(db: PathLike | None) -> list[Path]:
    """The database and the sidecars SQLite keeps beside it: all inputs of a command that reads it."""
    if db is None:
        return []
    return [Path(db), *(Path(f"{db}-{suffix}") for suffix in ("wal", "shm", "journal"))]


class NotRegularFile(OSError):
    """A folder, FIFO, device or socket where a file to read was expected."""


def read_regular(path: PathLike) -> bytes:
    """The bytes of the regular file at `path`. Opened without blocking and checked before any
    read: a FIFO planted at the path would block the open forever, /dev/zero never ends."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a folder" if stat.S_ISDIR(mode) else "not a regular file (a FIFO, device or socket)"
            raise NotRegularFile(errno.EINVAL, f"it is {kind}", os.fspath(path))
        with open(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)


def check_target(path: PathLike, inputs: Iterable[PathLike] = ()) -> Path:
    """`path` if a file may be written there; else a UsageError saying why and what would do."""
    target = Path(path)
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return target
    except OSError as exc:
        raise UsageError(f"cannot write {target}: {exc.strerror or exc}") from None
    if stat.S_ISLNK(st.st_mode):
        raise UsageError(f"{target} is a symbolic link: accelbench writes only files it makes, never "
                         f"through a link; remove it or choose another name")
    if not stat.S_ISREG(st.st_mode):
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "not a regular file (a device, FIFO or socket)"
        raise UsageError(f"cannot write {target}: it is {kind}; accepted: a new file or a regular file (replaced)")
    for source in inputs:
        try:
            other = os.stat(source)
        except OSError:
            continue
        if (other.st_dev, other.st_ino) == (st.st_dev, st.st_ino):
            raise UsageError(f"cannot write {target}: it is {source}, which this command reads; writing it "
                             f"would destroy it: choose another name")
    return target


def write_bytes(path: PathLike, data: bytes, inputs: Iterable[PathLike] = ()) -> Path:
    """Write `data` to `path` whole (module docstring); returns the path."""
    inputs = list(inputs)
    target = check_target(path, inputs)
    folder = target.parent
    temporary = folder / f".{target.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp"
    try:
        mode = stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        mode = 0o666  # a new file: the umask applies
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), mode)
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        check_target(target, inputs)  # still not a link, a special file or an input
        os.replace(temporary, target)
    except OSError as exc:
        _remove(temporary)
        raise UsageError(f"cannot write {target}: {exc.strerror or exc} (nothing was written under that "
                         f"name); accepted: a folder where this user may write, with room") from None
    except BaseException:
        _remove(temporary)
        raise
    _sync_folder(folder)
    return target


def write_text(path: PathLike, text: str, inputs: Iterable[PathLike] = ()) -> Path:
    """UTF-8; text that cannot be encoded (a lone surrogate from outside) is escaped, not fatal."""
    return write_bytes(path, text.encode("utf-8", errors="backslashreplace"), inputs)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _remove(path: Path) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _sync_folder(folder: Path) -> None:
    """The rename itself durable; where a folder cannot be opened (Windows), the file is."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass  # some filesystems refuse fsync on a folder; the file's own data is synced
    finally:
        os.close(fd)


# -- standard output -------------------------------------------------------------------------------

class _GuardedRaw(io.FileIO):
    """fd 1, whose write errors are StreamError: told apart from any other OSError."""

    def write(self, data):
        try:
            return super().write(data)
        except (BrokenPipeError, BlockingIOError):
            raise
        except OSError as exc:
            raise StreamError(exc.errno, exc.strerror) from None


class _QuietRaw(io.FileIO):
    """fd 2: a line that cannot be written there cannot be reported anywhere; the exit code stays."""

    def write(self, data):
        try:
            return super().write(data)
        except BlockingIOError:
            raise
        except OSError:
            return len(data)


class _ClosedRaw(io.FileIO):
    """Standard output the command was started without (`accelbench runs >&-`): as Unix tools do,
    every write fails (EBADF), in one line and a non-zero exit."""

    abandoned = False  # the failure was reported: what is left goes nowhere

    def write(self, data):
        if self.abandoned:
            return len(data)
        raise StreamError(errno.EBADF, os.strerror(errno.EBADF))


def _fill_closed_descriptors() -> None:
    """fd 0, 1 or 2 closed at start-up (Python then sets sys.stdin/stdout/stderr to None): /dev/null
    takes the number, so no file opened later (the database) receives what is meant for the
    terminal; stdin then reads as end of input, stdout fails in one line, stderr is silent."""
    for fd, name, raw_class in ((0, "stdin", None), (1, "stdout", _ClosedRaw), (2, "stderr", _QuietRaw)):
        if getattr(sys, name) is not None or getattr(sys, f"__{name}__") is not None:
            continue
        try:
            os.fstat(fd)
            taken = True  # by a file the interpreter opened since: left to it
        except OSError:
            taken = False
        number = os.open(os.devnull, os.O_RDWR)
        if not taken and number != fd:
            os.dup2(number, fd)
            os.close(number)
            number = fd
        if raw_class is None:
            sys.stdin = open(number, encoding="utf-8", closefd=False)
        else:
            setattr(sys, name, io.TextIOWrapper(io.BufferedWriter(raw_class(number, "wb", closefd=False)),
                                                encoding="utf-8", errors="backslashreplace", line_buffering=True))


def guard_standard_streams() -> None:
    """Escape what the output encoding cannot show (never a UnicodeEncodeError), and make a failed
    write to the real standard output a StreamError. Streams a test has replaced are left alone."""
    _fill_closed_descriptors()
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is getattr(sys, f"__{name}__") and isinstance(stream, io.TextIOWrapper):
            try:
                stream.reconfigure(errors="backslashreplace")
            except (ValueError, OSError):
                pass
    sys.stdout = _rewrapped(sys.stdout, sys.__stdout__, _GuardedRaw)
    sys.stderr = _rewrapped(sys.stderr, sys.__stderr__, _QuietRaw)


def _rewrapped(stream, original, raw_class):
    if stream is not original or not isinstance(stream, io.TextIOWrapper):
        return stream
    try:
        stream.flush()
        raw = raw_class(stream.fileno(), "wb", closefd=False)
    except (OSError, ValueError):
        return stream
    return io.TextIOWrapper(io.BufferedWriter(raw), encoding=stream.encoding, errors="backslashreplace",
                            line_buffering=stream.line_buffering, write_through=stream.write_through)


def abandon_stdout() -> None:
    """After a failed write: what is still buffered goes nowhere, instead of failing again at exit."""
    raw = getattr(getattr(sys.stdout, "buffer", None), "raw", None)
    if isinstance(raw, _ClosedRaw):
        raw.abandoned = True
        return
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
