"""An import validated and its rows built in a forked process, while this one stores them.

Storing is one SQLite writer; parsing, validating and building rows are Python: in one process they
take turns (about 4 s to parse and validate 100,000 results, 1 s to find the samples' text, 2.4 s
to build rows, then 3.5 s of storing). Here a child forked once the file is read parses and
validates it and sends each run's rows through a pipe as soon as that run is valid and built; this
process finds the samples' text meanwhile, then stores each run as it arrives, in its one
transaction. It never parses the document itself, and the child exits without freeing its copy.

Nothing changes in what is stored: the child runs the same validation and run_records on the same
bytes, and the transaction commits only once every run has arrived and been stored. An invalid
document is a UsageError here, with the child's text; a child that fails or vanishes is an error
here too, and the transaction rolls back. Memory is what one process doing it all would use (the
parsed document is the child's only). Used where forking is safe, with two cores or more, for
files large enough to pay for the fork; elsewhere import_file does it all itself.
"""
from __future__ import annotations

import multiprocessing
import os
import signal
import traceback
from collections.abc import Iterator, Mapping
from multiprocessing.connection import Connection
from typing import Any, Callable

from accelbench.errors import UsageError
from accelbench.forked import fork_is_safe
from accelbench.vocabulary import usable_cpus

# build(raw, path, tags, told) yields the records; told() returns what the parent passed to tell()
Build = Callable[[bytes, str, "Mapping[str, Any] | None", Callable[[], Any]], Iterator[dict[str, Any]]]
MIN_FILE_BYTES = 8 << 20    # below this the fork costs more than it saves


def worth_a_child(file_bytes: int) -> bool:
    """Fork a row builder for a file this large: forking is safe here and two cores are usable."""
    return file_bytes >= MIN_FILE_BYTES and usable_cpus() >= 2 and fork_is_safe()


class RowBuilderFailed(RuntimeError):
    """The child that builds the rows failed or vanished: nothing of the import is stored."""


class RowBuilder:
    """`with RowBuilder(build, raw, path, tags) as builder: store.restore_runs(builder.records())`,
    where build (see Build) runs in the child; `tell` sends it one value, which its told() returns."""

    def __init__(self, build: Build, raw: bytes, path: str, tags: Mapping[str, Any] | None):
        self._args: tuple = (build, raw, path, tags)
        self._process: Any = None
        self._receiver: Connection | None = None
        self._teller: Connection | None = None

    def __enter__(self) -> "RowBuilder":
        context = multiprocessing.get_context("fork")
        receiver, sender = context.Pipe(duplex=False)
        listener, teller = context.Pipe(duplex=False)
        self._process = context.Process(target=_child, args=((receiver, teller), sender, listener, *self._args),
                                        daemon=True)
        self._process.start()
        sender.close()
        listener.close()
        self._receiver, self._teller = receiver, teller
        self._args = ()  # the child has the bytes now: this process may free them
        return self

    def tell(self, value: Any) -> None:
        """Pass `value` (picklable) to the child's told(); a child gone already is found by records()."""
        assert self._teller is not None
        try:
            self._teller.send(value)
        except OSError:
            pass

    def records(self) -> Iterator[dict[str, Any]]:
        """Each run's restore_runs arguments, as the child built them, until it says it is done."""
        assert self._receiver is not None
        while True:
            try:
                kind, payload = self._receiver.recv()
            except EOFError:
                self._process.join(timeout=5)
                raise RowBuilderFailed(f"the process building the import's rows ended early "
                                       f"(exit status {self._process.exitcode}): nothing was stored") from None
            if kind == "done":
                return
            if kind == "invalid":
                raise UsageError(payload)
            if kind == "error":
                raise RowBuilderFailed(f"building the import's rows failed, nothing was stored:\n{payload}")
            yield payload

    def __exit__(self, *exc_info: object) -> None:
        for end in (self._receiver, self._teller):
            if end is not None:
                end.close()
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()  # done already, or not wanted any more (bad document, Ctrl-C)
            self._process.join()


def _child(parent_ends: tuple[Connection, Connection], sender: Connection, listener: Connection, build: Build,
           raw: bytes, path: str, tags: Mapping[str, Any] | None) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle; it stops us
    for end in parent_ends:  # held here, they would keep our pipes open after the parent has gone
        end.close()
    status = 0
    try:
        for record in build(raw, path, tags, listener.recv):
            sender.send(("run", record))
        sender.send(("done", None))
    except (BrokenPipeError, EOFError):  # the parent stopped: it has stopped the import
        status = 1
    except UsageError as exc:  # the document is invalid: the parent says so, as it would itself
        status = 1
        try:
            sender.send(("invalid", str(exc)))
        except OSError:
            pass
    except BaseException:  # noqa: BLE001 - reported to the parent, which decides
        status = 1
        try:
            sender.send(("error", traceback.format_exc()))
        except OSError:
            pass
    finally:
        sender.close()
        # no clean-up of the parsed document (half a second of frees) nor of the parent's state
        # (its SQLite connection, atexit handlers): none of it is this process's to run
        os._exit(status)
