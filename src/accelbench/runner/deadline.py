"""Stopping a run on SIGINT / SIGTERM, and ending a spec that runs past its time limit.

How a stop travels (timing/checkpoint.py holds the state):

1. The SIGINT / SIGTERM handler only records the signal. The run loop (between specs) and the
   harness (between timed blocks) call `checkpoint()`, which raises StopRun from ordinary code;
   the run is stored as interrupted and the command exits 128 + signal (130, 143).
2. Work that never reaches a checkpoint (a workload timing itself, a user function that sleeps)
   is nudged by SIGALRM: inside a spec, an interval timer fires a short grace after the stop (or
   after the spec's deadline) and its handler raises from wherever the main thread is. If that
   exception is swallowed (jax's gc hook prints "Exception ignored" and goes on), the timer fires
   again every REPEAT_S until the spec scope ends.
3. A second SIGINT / SIGTERM ends the process at once (os._exit): the run stays "running" in the
   database, and is shown as interrupted once its process has gone (store/liveness.py).

What this cannot stop: a Python thread cannot be killed, and a signal handler runs only when the
main thread returns to the interpreter. A C extension that never returns and never checks for
signals (a hung driver call, a BLAS kernel stuck on a lock) holds the run until the process is
killed; then the second signal, or SIGKILL, ends it. Signals can only be handled in the main
thread: elsewhere (the API called from a thread) only the checkpoints apply.
"""
from __future__ import annotations

import os
import signal
import threading
from contextlib import contextmanager
from collections.abc import Iterator

from accelbench.timing import checkpoint

DEFAULT_SPEC_TIMEOUT_S = 600.0  # far above any built-in spec (the slowest take about a minute)
GRACE_S = 1.0    # the checkpoints get this long to stop cleanly before SIGALRM steps in
REPEAT_S = 0.5   # then SIGALRM fires this often until the spec has ended
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Scope:
    installed = 0                       # nesting depth of stop_on_signals()
    spec_limit_s: float | None = DEFAULT_SPEC_TIMEOUT_S
    in_spec = False                     # SIGALRM may raise only while a spec is in flight


_scope = _Scope()


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _on_stop_signal(signum: int, frame) -> None:
    if checkpoint.stop_signal() is not None:  # the second signal: the user means it
        os.write(2, f"\naccelbench: signal {signum} again: exiting at once\n".encode())
        os._exit(128 + signum)
    checkpoint.request_stop(signum)
    if _scope.in_spec:
        signal.setitimer(signal.ITIMER_REAL, GRACE_S, REPEAT_S)


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM ask the run to stop (see the module doc); nested uses share one
    installation, and the outermost restores the previous handlers and forgets the request."""
    if _scope.installed or not _main_thread():
        _scope.installed += 1
        try:
            yield
        finally:
            _scope.installed -= 1
        return
    previous = {signum: signal.signal(signum, _on_stop_signal) for signum in STOP_SIGNALS}
    _scope.installed += 1
    try:
        yield
    finally:
        _scope.installed -= 1
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        checkpoint.clear_stop()


@contextmanager
def spec_timeout(limit_s: float | None) -> Iterator[None]:
    """The time limit every spec of the run gets (None: no limit)."""
    if limit_s is not None and not limit_s > 0:
        raise ValueError(f"spec timeout must be above 0 seconds, got {limit_s!r}")
    before, _scope.spec_limit_s = _scope.spec_limit_s, limit_s
    try:
        yield
    finally:
        _scope.spec_limit_s = before


def _on_alarm(signum: int, frame) -> None:
    if _scope.in_spec:
        checkpoint.checkpoint()  # raises TimedOut or StopRun, whichever is due


@contextmanager
def spec_scope() -> Iterator[None]:
    """One spec's work: a deadline the checkpoints see, and SIGALRM as the fallback."""
    limit_s = _scope.spec_limit_s
    checkpoint.set_deadline(limit_s)
    alarm = _main_thread() and hasattr(signal, "setitimer")
    previous = None
    if alarm:
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        first_s = GRACE_S if checkpoint.stop_signal() is not None else (limit_s or 0) + GRACE_S
        if limit_s is not None or checkpoint.stop_signal() is not None:
            signal.setitimer(signal.ITIMER_REAL, first_s, REPEAT_S)
    _scope.in_spec = True
    try:
        yield
    finally:
        _scope.in_spec = False
        checkpoint.set_deadline(None)
        if alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
