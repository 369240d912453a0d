"""Every step with a deadline: a hung device ends as a failure with its cause, never as a hang.

Library calls (NVML, amdsmi) run in a daemon thread that is abandoned at its deadline: a thread
stuck in a driver call cannot be killed, but it no longer holds the check up, and a daemon thread
does not keep the process alive at exit. Framework work (a CUDA context that may hang for good)
runs in a child process, which is killed at its deadline.
"""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Outcome:
    """What a bounded step gave: its value, or the exception it raised, or that it timed out."""

    value: Any = None
    error: BaseException | None = None
    timed_out: bool = False
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out


def call_within(fn: Callable[[], Any], limit_s: float) -> Outcome:
    """fn() in a daemon thread; at limit_s it is left behind and the outcome says it timed out."""
    box: dict[str, Any] = {}
    start_s = time.monotonic()

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller as the step's cause
            box["error"] = exc

    thread = threading.Thread(target=target, name="accelbench-check-step", daemon=True)
    thread.start()
    thread.join(limit_s)
    elapsed_s = time.monotonic() - start_s
    if thread.is_alive():
        return Outcome(timed_out=True, elapsed_s=elapsed_s)
    return Outcome(box.get("value"), box.get("error"), False, elapsed_s)


def run_child(module: str, args: list[str], limit_s: float) -> Outcome:
    """`python -m module args` with a deadline; its last stdout line is JSON (the value)."""
    start_s = time.monotonic()
    try:
        done = subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True,
                              timeout=limit_s, check=False)
    except subprocess.TimeoutExpired:  # subprocess.run kills the child before raising
        return Outcome(timed_out=True, elapsed_s=time.monotonic() - start_s)
    elapsed_s = time.monotonic() - start_s
    lines = [ln for ln in done.stdout.splitlines() if ln.strip()]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return Outcome(error=RuntimeError(f"exit {done.returncode}: {tail}"), elapsed_s=elapsed_s)
    try:
        return Outcome(json.loads(lines[-1]), elapsed_s=elapsed_s)
    except ValueError:
        return Outcome(error=RuntimeError(f"unreadable output: {lines[-1][:200]}"), elapsed_s=elapsed_s)
