"""Running one probe so that it reports a status instead of raising.

A probe is a function returning a list of Devices. It signals an expected failure with
ProbeFailure(status, message); anything else it raises is classified here, so one broken
driver or platform never stops the rest of the inventory.
"""
from __future__ import annotations

import time
import traceback
from typing import Callable, Iterable

from accelbench.devices.model import (
    ERROR, NO_PERMISSION, NOT_INSTALLED, OK, PROBE_STATUSES, Device, ProbeReport,
)


class ProbeFailure(Exception):
    """An expected reason for a probe to find nothing (no driver, not supported, ...)."""

    def __init__(self, status: str, message: str):
        if status not in PROBE_STATUSES:
            raise ValueError(f"unknown probe status {status!r}; accepted: {', '.join(PROBE_STATUSES)}")
        super().__init__(message)
        self.status = status
        self.message = message


def classify(exc: BaseException) -> tuple[str, str]:
    """(status, message) for an exception a probe raised."""
    if isinstance(exc, ProbeFailure):
        return exc.status, exc.message
    if isinstance(exc, ModuleNotFoundError) and not (exc.name or "").startswith("accelbench"):
        return NOT_INSTALLED, f"{exc.name or 'a required module'} is not installed"
    if isinstance(exc, PermissionError):
        return NO_PERMISSION, str(exc)
    text = str(exc).strip() or type(exc).__name__
    return ERROR, f"error: {text}"


def run_probe(name: str, probe: Callable[[], Iterable[Device]], clock=time.perf_counter) -> ProbeReport:
    started = clock()
    try:
        devices = tuple(probe())
    except Exception as exc:  # noqa: BLE001 - a probe must never take the inventory down
        status, message = classify(exc)
        return ProbeReport(
            probe=name, status=status, message=message, elapsed_s=clock() - started,
            debug="".join(traceback.format_exception(exc)),
        )
    message = f"{len(devices)} device{'s' if len(devices) != 1 else ''}"
    return ProbeReport(probe=name, status=OK, message=message, devices=devices, elapsed_s=clock() - started)
