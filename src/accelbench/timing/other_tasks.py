"""The CPU time of every other process's threads, in nanoseconds, from /proc/<pid>/task/*/schedstat.

/proc/stat counts in 10 ms ticks, too coarse to say who ran during a window of a few tens of ms;
schedstat counts nanoseconds per thread. Summing it over the other processes this one can see tells
a neighbour that took the cores from a wait that nobody caused (a virtual CPU slow to wake). What a
container hides (other containers, the host) stays with the ticks. Standard library only.
"""
from __future__ import annotations

import os
import time
from pathlib import Path

# a node with thousands of threads must not turn a snapshot into a stall: past this much of our own
# CPU time, give up (CPU time, not wall time: on a loaded machine the scan waits for a core too)
SCAN_BUDGET_S = 0.03


def _ppid(stat_text: str) -> str:
    # the comm field may hold spaces and parentheses: the fields after its last ')' are fixed
    return stat_text.rpartition(")")[2].split()[1]


def _own_family(pids: list[str], proc: Path, me: str) -> set[str]:
    """This process and its descendants (a compiler or a probe we started is not another program)."""
    parent: dict[str, str] = {}
    for pid in pids:
        try:
            parent[pid] = _ppid((proc / pid / "stat").read_text())
        except (OSError, IndexError):
            continue
    family, grew = {me}, True
    while grew:
        grew = False
        for pid, ppid in parent.items():
            if ppid in family and pid not in family:
                family.add(pid)
                grew = True
    return family


def others_ns(proc: Path, budget_s: float = SCAN_BUDGET_S) -> dict[str, int] | None:
    """"pid/tid" -> ns on a CPU for the threads of every process but this one and its children;
    None where /proc lists no process or the scan ran past its budget."""
    return scan(proc, budget_s)[0]


def family_threads_ns(proc: Path, pids: list[str]) -> dict[str, tuple[int, int]]:
    """tid -> (ns on a CPU, ns waiting for one) for every thread of `pids` (a process's children:
    work a backend hands to a child process runs on the cores as surely as its own threads)."""
    found: dict[str, tuple[int, int]] = {}
    for pid in pids:
        try:
            tasks = os.listdir(proc / pid / "task")
        except OSError:
            continue
        for tid in tasks:
            try:
                fields = (proc / pid / "task" / tid / "schedstat").read_text().split()
                found[tid] = (int(fields[0]), int(fields[1]))
            except (OSError, ValueError, IndexError):
                continue
    return found


def scan(proc: Path, budget_s: float = SCAN_BUDGET_S) -> tuple[dict[str, int] | None, list[str]]:
    """(others_ns's answer, this process's descendants' pids), from one pass over /proc."""
    started = time.thread_time()
    try:
        pids = [entry.name for entry in proc.iterdir() if entry.name.isdigit()]
    except OSError:
        return None, []
    if not pids:
        return None, []
    me = str(os.getpid())
    family = _own_family(pids, proc, me)
    children = sorted(family - {me})
    found: dict[str, int] = {}
    for pid in pids:
        if pid in family:
            continue
        if time.thread_time() - started > budget_s:
            return None, children
        try:
            tasks = os.listdir(proc / pid / "task")
        except OSError:
            continue  # ended meanwhile, or not ours to read
        for tid in tasks:
            try:
                found[f"{pid}/{tid}"] = int((proc / pid / "task" / tid / "schedstat").read_text().split()[0])
            except (OSError, ValueError, IndexError):
                continue
    return found, children


def describe(pid: str, proc: Path) -> str:
    """'stress (pid 1234)', or 'pid 1234' where its name cannot be read."""
    try:
        name = (proc / pid / "comm").read_text().strip()
    except OSError:
        return f"pid {pid}"
    return f"{name} (pid {pid})"
