"""Is the process measuring a "running" run still there? If not, the run was interrupted.

A run stores its process id and host at start (runs.pid, runs.host). A SIGKILL, a full disk or a
power cut leaves it "running" for good; every command that reads a run's status asks here and
shows such a run as interrupted. The stored status is NOT rewritten when seen: reading commands
never write, and the answer is only known on the host that ran it (another host, or a run stored
before schema v3 without a pid, keeps "running").

A pid can be reused: the process found under it counts only if it was started before the run
(psutil's create_time against the run's started_at).
"""
from __future__ import annotations

import os
import socket
from datetime import datetime

CREATE_TIME_SLACK_S = 2.0  # clock rounding between the process table and the stored start time


def this_host() -> str:
    return socket.gethostname()


def process_alive(pid: int, started_at: str | None) -> bool:
    """The process `pid` exists, is not a zombie, and was started before `started_at` (ISO 8601)."""
    import psutil

    if pid == os.getpid():
        return True
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        created_s = process.create_time()
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # exists but cannot be inspected (another user's): assume it is ours
        return True
    try:
        started_s = datetime.fromisoformat(started_at).timestamp() if started_at else None
    except ValueError:
        started_s = None
    return started_s is None or created_s <= started_s + CREATE_TIME_SLACK_S


def shown_status(status: str, pid: int | None, host: str | None, started_at: str | None) -> str:
    """The status to show: "interrupted" for a running run whose process on this host has gone."""
    if status != "running" or pid is None or not host or host != this_host():
        return status
    return status if process_alive(int(pid), started_at) else "interrupted"
