"""What the rest of the machine did while we measured: the figures behind a `noisy` verdict.

Over each timed window, on the cores this process may use (its affinity mask):
- CPU used by other processes: busy ticks in /proc/stat minus this process's own CPU time
  (os.times(): every thread, and children waited for; psutil adds live children when installed);
- steal: time the hypervisor gave our virtual CPUs to someone else (/proc/stat `steal`);
- idle cores: what was left over, so that a neighbour on a spare core is not counted against us;
- run-queue wait of our threads (/proc/self/task/*/schedstat): time runnable but not running,
  the direct cost of contention;
- the 1-minute load average, for the record;
- our own cores: CPU time of all our threads / wall time (schedstat, in nanoseconds), so a claim of
  N threads can be checked, and a wait caused by our own threads filling the cores (a framework's
  pool still spinning, pools stacked on pools) is not blamed on other programs.

/proc/stat and os.times() count in ticks (10 ms), so a window too short for its figures to be
good to a tenth of a core says "not measurable" instead of inventing one. Standard library only.
"""
from __future__ import annotations

import dataclasses
import math
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from accelbench.timing.contention_limits import (IDLE_CORES_SPARE, MAX_UNCERTAINTY_CORES, OTHERS_CORES_LIMIT,
                                                  OTHERS_NEGLIGIBLE_CORES, OWN_FULL_SHARE, RUN_WAIT_LIMIT,
                                                  SHORT_WINDOW_WAIT_LIMIT, STEAL_LIMIT)
from accelbench.timing.device_slowdowns import device_reasons
from accelbench.timing.other_tasks import describe, family_threads_ns, scan
from accelbench.timing.run_notice import run_notice  # noqa: F401 - where callers have always found it

PROC = Path("/proc")
TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


@dataclass(frozen=True)
class CpuTicks:
    """Ticks summed over a set of cores since boot (guest time is already inside user and nice)."""

    busy: int
    idle: int
    steal: int
    cores: int


def parse_proc_stat(text: str, cpus: Iterable[int] | None = None) -> CpuTicks | None:
    """The `cpuN` lines of /proc/stat for the cores in `cpus` (all when None); None if none match."""
    wanted = set(cpus) if cpus is not None else None
    busy = idle = steal = cores = 0
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or not name[3:].isdigit():
            continue
        if wanted is not None and int(name[3:]) not in wanted:
            continue
        fields = [int(x) for x in rest.split()] + [0] * 8
        user, nice, system, idle_t, iowait, irq, softirq, steal_t = fields[:8]
        busy += user + nice + system + irq + softirq
        idle += idle_t + iowait
        steal += steal_t
        cores += 1
    return CpuTicks(busy, idle, steal, cores) if cores else None


def parse_schedstat(text: str) -> tuple[int, int]:
    """(ns on a CPU, ns waiting on a run queue) from a /proc/.../schedstat line."""
    on_cpu_ns, wait_ns, *_ = (int(x) for x in text.split())
    return on_cpu_ns, wait_ns


@dataclass(frozen=True)
class Snapshot:
    wall_s: float
    ticks: CpuTicks | None
    own_cpu_s: float
    threads_ns: dict[str, tuple[int, int]]   # thread id -> (on cpu, waiting), where readable
    load_1m: float | None
    # "pid/tid" -> ns on a CPU for every other process's thread this process can see; None where
    # they could not all be read (then only the ticks above speak for other processes)
    others_ns: dict[str, int] | None = None


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _usable_cpus() -> set[int] | None:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def own_cpu_s() -> float:
    """CPU seconds of this process: all its threads, children it waited for, and live children."""
    t = os.times()
    total = t.user + t.system + t.children_user + t.children_system
    try:
        import psutil  # optional: children still running are not in os.times()

        for child in psutil.Process().children(recursive=True):
            try:
                c = child.cpu_times()
                total += c.user + c.system
            except psutil.Error:
                continue
    except Exception:  # noqa: BLE001 - psutil missing or the process table refusing: os.times() stands
        pass
    return total


def _threads_ns(proc: Path) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    try:
        tasks = list((proc / "self" / "task").iterdir())
    except OSError:
        return found
    for task in tasks:
        text = _read(task / "schedstat")
        if text:
            try:
                found[task.name] = parse_schedstat(text)
            except ValueError:
                continue
    return found


class FamilyThreads:
    """The CPU and run-queue counters of our child processes' threads (the children alive when made),
    and with `own` of this process's threads too (runner/block_audit.py)."""

    def __init__(self, proc: Path = PROC, own: bool = True) -> None:
        self.proc, self.own = proc, own
        self.children = scan(proc)[1]

    def read(self) -> dict[str, tuple[int, int]]:
        mine = _threads_ns(self.proc) if self.own else {}
        return {**mine, **family_threads_ns(self.proc, self.children)}


def summed_ns(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> tuple[int, int]:
    """(ns on a CPU, ns runnable) the threads spent between two readings (a thread born between
    them counts whole)."""
    on_cpu = runnable = 0
    for tid, (cpu_ns, wait_ns) in after.items():
        old_cpu, old_wait = before.get(tid, (0, 0))
        on_cpu += cpu_ns - old_cpu
        runnable += cpu_ns + wait_ns - old_cpu - old_wait
    return on_cpu, runnable


def snapshot(proc: Path = PROC) -> Snapshot:
    stat = _read(proc / "stat")
    try:
        load_1m = os.getloadavg()[0]
    except (AttributeError, OSError):
        load_1m = None
    others, children = scan(proc)
    threads = {**_threads_ns(proc), **family_threads_ns(proc, children)}  # a child's threads are ours too
    return Snapshot(time.monotonic(), parse_proc_stat(stat, _usable_cpus()) if stat else None,
                    own_cpu_s(), threads, load_1m, others)


@dataclass(frozen=True)
class Interference:
    """Other processes' CPU use, steal and our run-queue wait over one window (cores = core-seconds/s)."""

    window_s: float
    cores: int = 0
    others_cores: float | None = None
    idle_cores: float | None = None
    steal_share: float | None = None
    run_wait_share: float | None = None
    load_1m: float | None = None
    not_measurable: str = ""        # why the figures are absent ("" when they are there)
    own_cores: float | None = None  # CPU time of this process's threads / wall time
    # runnable time (on a CPU or waiting for one) of our threads / wall time: the parallelism they
    # asked for, which load from other processes does not lower (own_cores it does)
    own_demand_cores: float | None = None
    # other processes' CPU time from their threads' nanosecond counters (None: not all readable),
    # and the one that took the most ("stress (pid 1234)")
    visible_others_cores: float | None = None
    top_other: str = ""

    @property
    def others_share(self) -> float | None:
        return None if self.others_cores is None or not self.cores else self.others_cores / self.cores

    @property
    def own_threads(self) -> bool:
        """Our own threads filled the cores and others took next to nothing: any wait is ours."""
        if self.own_cores is None or not self.cores or self.own_cores < OWN_FULL_SHARE * self.cores:
            return False
        return (self.others_cores or 0.0) < OTHERS_NEGLIGIBLE_CORES and (self.steal_share or 0.0) < STEAL_LIMIT

    @property
    def foreign_wait_share(self) -> float | None:
        """Our threads' wait for a CPU beyond what they explain themselves: with D runnable threads on
        C cores (D > C: a backend's own workers beside its calling thread, PoCL's for one) they wait
        (D - C) / D of the time with no other program at all."""
        if self.run_wait_share is None:
            return None
        demand, cores = self.own_demand_cores or 0.0, self.cores
        own_share = max(0.0, demand - cores) / demand if demand > 0 and cores else 0.0
        return max(0.0, self.run_wait_share - own_share)

    @property
    def disturbed(self) -> bool:
        wait = self.foreign_wait_share or 0.0
        if self.own_threads:
            return wait >= SHORT_WINDOW_WAIT_LIMIT
        if self.not_measurable:
            # a wait no visible program caused (a virtual CPU slow to wake up) names no cause: not noisy
            nobody = self.visible_others_cores is not None and self.visible_others_cores < OTHERS_NEGLIGIBLE_CORES
            return wait >= SHORT_WINDOW_WAIT_LIMIT and not nobody
        if (self.steal_share or 0.0) >= STEAL_LIMIT:
            return True
        crowded = (self.idle_cores or 0.0) < IDLE_CORES_SPARE or wait >= RUN_WAIT_LIMIT
        return (self.others_cores or 0.0) >= OTHERS_CORES_LIMIT and crowded

    @property
    def cause(self) -> str:
        """The kind of the disturbance text() describes (accelbench.verdict): what a verdict reads."""
        from accelbench.verdict import CPU_WAIT, HYPERVISOR, OTHER_PROCESSES, OWN_THREADS

        if self.own_threads and self.disturbed:
            return OWN_THREADS
        if self.not_measurable:  # other processes when their threads' counters showed who ran
            return CPU_WAIT if self.visible_others_cores is None else OTHER_PROCESSES
        if (self.steal_share or 0.0) >= STEAL_LIMIT and (self.others_cores or 0.0) < OTHERS_CORES_LIMIT:
            return HYPERVISOR
        return OTHER_PROCESSES

    def text(self) -> str:
        """"other processes used 48% of the 2 cores during this measurement (0.96 cores; steal 0%; ...)"."""
        if self.own_threads and self.disturbed:
            return (f"our own threads oversubscribed the {self.cores} core{'s' if self.cores != 1 else ''} "
                    f"({self.own_cores:.1f} cores busy, other processes next to none): they waited for a CPU "
                    f"{self.run_wait_share:.0%} of the time during this measurement (another framework's thread "
                    f"pool still spinning, or thread pools stacked on each other)")
        if self.not_measurable and self.disturbed:
            if self.visible_others_cores is not None:
                return (f"our threads waited for a CPU {self.run_wait_share:.0%} of the time during this measurement: "
                        f"other processes used {self.visible_others_cores:.2f} cores"
                        f"{f', the most {self.top_other}' if self.top_other else ''}")
            return (f"our threads waited for a CPU {self.run_wait_share:.0%} of the time during this measurement: "
                    f"something else ran on its cores ({self.not_measurable} to say what)")
        if self.not_measurable:
            return f"interference not measurable: {self.not_measurable}"
        details = [f"{self.others_cores:.2f} cores", f"steal {self.steal_share:.0%}"]
        if self.run_wait_share is not None:
            details.append(f"our threads waited for a CPU {self.run_wait_share:.0%} of the time")
        plural = "s" if self.cores != 1 else ""
        others = f"other processes used {self.others_share:.0%} of the {self.cores} core{plural}"
        if (self.steal_share or 0.0) >= STEAL_LIMIT and (self.others_cores or 0.0) < OTHERS_CORES_LIMIT:
            # the hypervisor, not a neighbour on this machine, took the time: say that first
            return (f"the hypervisor took {self.steal_share:.0%} of the cores' time (steal) during this measurement "
                    f"({others}; {'; '.join(details[2:] or details[:1])})")
        if self.top_other and (self.visible_others_cores or 0.0) >= OTHERS_NEGLIGIBLE_CORES:
            details.append(f"the most {self.top_other}")
        return f"{others} during this measurement ({'; '.join(details)})"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"window_s": self.window_s, "cores": self.cores, "others_cores": self.others_cores,
                "others_share": self.others_share, "idle_cores": self.idle_cores,
                "steal_share": self.steal_share, "run_wait_share": self.run_wait_share,
                "load_1m": self.load_1m, "disturbed": self.disturbed, "own_cores": self.own_cores,
                "own_demand_cores": self.own_demand_cores, "foreign_wait_share": self.foreign_wait_share,
                "own_threads": self.own_threads, "visible_others_cores": self.visible_others_cores}
        if self.top_other:
            data["top_other"] = self.top_other
        if self.not_measurable:
            data["not_measurable"] = self.not_measurable
        return data


def between(before: Snapshot, after: Snapshot, proc: Path = PROC) -> Interference:
    """The interference over the window between two snapshots."""
    window_s = after.wall_s - before.wall_s
    own, demand = _own_cores(before, after), _own_demand(before, after)
    visible, top_pid = _others_cores(before, after)
    top = describe(top_pid, proc) if top_pid and (visible or 0.0) >= OTHERS_NEGLIGIBLE_CORES else ""
    if before.ticks is None or after.ticks is None or before.ticks.cores != after.ticks.cores:
        return Interference(window_s, load_1m=after.load_1m, not_measurable="/proc/stat is not readable here",
                            own_cores=own, own_demand_cores=demand, visible_others_cores=visible, top_other=top)
    cores = after.ticks.cores
    uncertainty_cores = (math.sqrt(cores) + 2) * TICK_S / window_s if window_s > 0 else math.inf
    if uncertainty_cores > MAX_UNCERTAINTY_CORES:
        # who else ran cannot be told from ticks this coarse, but our threads' wait for a CPU can
        # (schedstat counts nanoseconds): a short window is still judged on that
        return Interference(window_s, cores, run_wait_share=_run_wait_share(before, after), load_1m=after.load_1m,
                            not_measurable=(f"a {window_s * 1e3:.0f} ms window is too short for 10 ms CPU-time "
                                            f"ticks on {cores} cores"), own_cores=own, own_demand_cores=demand,
                            visible_others_cores=visible, top_other=top)
    busy_s = (after.ticks.busy - before.ticks.busy) * TICK_S
    idle_s = (after.ticks.idle - before.ticks.idle) * TICK_S
    steal_s = (after.ticks.steal - before.ticks.steal) * TICK_S
    others_s = max(0.0, busy_s - (after.own_cpu_s - before.own_cpu_s))
    all_s = busy_s + idle_s + steal_s
    ticked_cores = (after.own_cpu_s - before.own_cpu_s) / window_s  # counts threads that ended in the window
    return Interference(window_s, cores, others_s / window_s, idle_s / window_s,
                        steal_s / all_s if all_s > 0 else 0.0, _run_wait_share(before, after), after.load_1m,
                        own_cores=max(own or 0.0, ticked_cores), own_demand_cores=demand, visible_others_cores=visible, top_other=top)


def _others_cores(before: Snapshot, after: Snapshot) -> tuple[float | None, str | None]:
    """CPU time of the other processes' threads we can see over the window / its wall time, in
    nanoseconds (so a window of a few ms is measured too), and the pid that took the most; a thread
    born in the window counts whole, one that ended in it is lost (short-lived processes)."""
    window_s = after.wall_s - before.wall_s
    if before.others_ns is None or after.others_ns is None or window_s <= 0:
        return None, None
    by_pid: dict[str, int] = {}
    for key, cpu_ns in after.others_ns.items():
        used = cpu_ns - before.others_ns.get(key, 0)
        if used > 0:
            pid = key.partition("/")[0]
            by_pid[pid] = by_pid.get(pid, 0) + used
    if not by_pid:
        return 0.0, None
    top = max(by_pid, key=lambda pid: by_pid[pid])
    return sum(by_pid.values()) / 1e9 / window_s, top


def _own_cores(before: Snapshot, after: Snapshot) -> float | None:
    """CPU time of our threads over the window / its wall time, from schedstat's nanoseconds (a
    thread born in the window counts whole); None where /proc/self/task is not readable."""
    window_s = after.wall_s - before.wall_s
    if not after.threads_ns or window_s <= 0:
        return None
    on_cpu_ns = sum(cpu_ns - before.threads_ns.get(tid, (0, 0))[0] for tid, (cpu_ns, _) in after.threads_ns.items())
    return on_cpu_ns / 1e9 / window_s


def _own_demand(before: Snapshot, after: Snapshot) -> float | None:
    """Time our threads were runnable (on a CPU or queued for one) over the window / its wall time."""
    window_s = after.wall_s - before.wall_s
    if not after.threads_ns or window_s <= 0:
        return None
    runnable_ns = sum(cpu_ns + wait_ns - sum(before.threads_ns.get(tid, (0, 0)))
                      for tid, (cpu_ns, wait_ns) in after.threads_ns.items())
    return runnable_ns / 1e9 / window_s


def _run_wait_share(before: Snapshot, after: Snapshot) -> float | None:
    """Share of the time our threads were runnable that they spent waiting for a CPU (a thread
    born in the window counts whole)."""
    if not after.threads_ns:
        return None
    on_cpu = wait = 0
    for tid, (cpu_ns, wait_ns) in after.threads_ns.items():
        old_cpu, old_wait = before.threads_ns.get(tid, (0, 0))
        on_cpu, wait = on_cpu + cpu_ns - old_cpu, wait + wait_ns - old_wait
    return wait / (on_cpu + wait) if on_cpu + wait > 0 else None


class watch:
    """`with watch() as w: ...` then `w.result` is the window's Interference (never raises)."""

    def __init__(self, proc: Path = PROC):
        self.proc = proc
        self.result: Interference | None = None
        self._before: Snapshot | None = None

    def __enter__(self) -> "watch":
        try:
            self._before = snapshot(self.proc)
        except Exception:  # noqa: BLE001 - interference is evidence, never a reason to fail a measurement
            self._before = None
        return self

    def __exit__(self, *exc: object) -> None:
        if self._before is not None:
            try:
                self.result = between(self._before, snapshot(self.proc), self.proc)
            except Exception:  # noqa: BLE001
                self.result = None


# -- a result's verdict -------------------------------------------------------------------------

def attach(measurement: Any, findings: list, windows: dict[str, Interference | None], device: str):
    """The measurement with its windows' figures in telemetry["interference"], and the findings
    with a `noisy` one per disturbed window (the phase named unless it is the compute one)."""
    from accelbench.verdict import NOISY, VerdictReason

    telemetry = dict(measurement.telemetry)
    found = [VerdictReason(NOISY, ("" if phase == "compute" else f"{phase}: ") + window.text(), window.cause)
             for phase, window in windows.items() if window is not None and window.disturbed]
    found += [VerdictReason(NOISY, reason) for reason in device_reasons(telemetry, device)]
    telemetry["interference"] = {phase: w.to_dict() for phase, w in windows.items() if w is not None}
    return dataclasses.replace(measurement, telemetry=telemetry), found + list(findings)  # the cause first
