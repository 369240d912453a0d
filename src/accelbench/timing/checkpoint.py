"""Points where a measurement may be stopped: a stop asked for by a signal, or a spec's deadline.

Signal handlers only record what was asked (runner/deadline.py installs them); the exception is
raised here, from ordinary Python code between blocks of work, where nothing can swallow it. An
exception raised inside a signal handler lands wherever the interpreter happens to be, e.g. in
jax's garbage-collection hook, which prints "Exception ignored" and goes on.

Standard library only: the harness calls `checkpoint()` between timed blocks.
"""
from __future__ import annotations

import time


class StopRun(KeyboardInterrupt):
    """The run was asked to stop (SIGINT or SIGTERM): a KeyboardInterrupt, so every layer that
    already stops cleanly on Ctrl-C stops on it too. `signum` gives the exit status 128 + signum."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum


class TimedOut(BaseException):
    """A spec ran past its time limit. A BaseException, so a user's `except Exception` around
    their own code cannot swallow it."""

    def __init__(self, limit_s: float):
        super().__init__(f"timed out after {limit_s:g} s")
        self.limit_s = limit_s


class _State:
    stop_signum: int | None = None
    deadline_s: float | None = None   # time.monotonic() after which the spec in flight is over
    limit_s: float = 0.0


_state = _State()


def request_stop(signum: int) -> None:
    """Called from a signal handler: only records the request."""
    _state.stop_signum = signum


def stop_signal() -> int | None:
    """The signal that asked the run to stop, or None."""
    return _state.stop_signum


def clear_stop() -> None:
    _state.stop_signum = None


def set_deadline(limit_s: float | None) -> None:
    """Start (a number of seconds) or end (None) the time limit of the spec in flight."""
    _state.deadline_s = None if limit_s is None else time.monotonic() + limit_s
    _state.limit_s = limit_s or 0.0


def seconds_left() -> float | None:
    return None if _state.deadline_s is None else _state.deadline_s - time.monotonic()


def checkpoint() -> None:
    """Raise StopRun if a stop was asked for, TimedOut if the spec's deadline has passed."""
    if _state.stop_signum is not None:
        raise StopRun(_state.stop_signum)
    if _state.deadline_s is not None and time.monotonic() >= _state.deadline_s:
        raise TimedOut(_state.limit_s)
