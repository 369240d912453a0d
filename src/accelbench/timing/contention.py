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

PROC = Path("/proc")
TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)
# A result is disturbed when others took more than a quarter of a core on average while the
# cores were nearly full (under half a core idle) or our own threads had to queue for a CPU:
# on a 2-core machine that is ~12% of the capacity, more than the ±5% target the quick rigor
# asks for. A neighbour on an otherwise idle core (a big machine) is recorded but not counted.
OTHERS_CORES_LIMIT = 0.25
IDLE_CORES_SPARE = 0.5
RUN_WAIT_LIMIT = 0.02      # our threads spent >= 2% of their runnable time waiting for a CPU
STEAL_LIMIT = 0.05         # the hypervisor took >= 5% of our cores' time
MAX_UNCERTAINTY_CORES = 0.1  # tick rounding may move the figures by at most a tenth of a core
# a window too short for ticks is judged on our threads' wait alone: an idle machine leaves them
# waiting ~0-2% of the time, another process on their core tens of percent
SHORT_WINDOW_WAIT_LIMIT = 0.10
# our own threads filled the cores when they used >= 90% of them and others next to nothing
# (a tenth of a core is tick rounding): a wait is then our own doing. It is still judged on the
# wait alone, at the short-window limit, since our threads' own stacking slows the timed one too
OWN_FULL_SHARE = 0.9
OTHERS_NEGLIGIBLE_CORES = 0.1


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


def snapshot(proc: Path = PROC) -> Snapshot:
    stat = _read(proc / "stat")
    try:
        load_1m = os.getloadavg()[0]
    except (AttributeError, OSError):
        load_1m = None
    return Snapshot(time.monotonic(), parse_proc_stat(stat, _usable_cpus()) if stat else None,
                    own_cpu_s(), _threads_ns(proc), load_1m)


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
        if self.own_threads or self.not_measurable:
            return wait >= SHORT_WINDOW_WAIT_LIMIT
        if (self.steal_share or 0.0) >= STEAL_LIMIT:
            return True
        crowded = (self.idle_cores or 0.0) < IDLE_CORES_SPARE or wait >= RUN_WAIT_LIMIT
        return (self.others_cores or 0.0) >= OTHERS_CORES_LIMIT and crowded

    def text(self) -> str:
        """"other processes used 48% of the 2 cores during this measurement (0.96 cores; steal 0%; ...)"."""
        if self.own_threads and self.disturbed:
            return (f"our own threads oversubscribed the {self.cores} core{'s' if self.cores != 1 else ''} "
                    f"({self.own_cores:.1f} cores busy, other processes next to none): they waited for a CPU "
                    f"{self.run_wait_share:.0%} of the time during this measurement (another framework's thread "
                    f"pool still spinning, or thread pools stacked on each other)")
        if self.not_measurable and self.disturbed:
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
        return f"{others} during this measurement ({'; '.join(details)})"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"window_s": self.window_s, "cores": self.cores, "others_cores": self.others_cores,
                "others_share": self.others_share, "idle_cores": self.idle_cores,
                "steal_share": self.steal_share, "run_wait_share": self.run_wait_share,
                "load_1m": self.load_1m, "disturbed": self.disturbed, "own_cores": self.own_cores,
                "own_demand_cores": self.own_demand_cores, "foreign_wait_share": self.foreign_wait_share,
                "own_threads": self.own_threads}
        if self.not_measurable:
            data["not_measurable"] = self.not_measurable
        return data


def between(before: Snapshot, after: Snapshot) -> Interference:
    """The interference over the window between two snapshots."""
    window_s = after.wall_s - before.wall_s
    own, demand = _own_cores(before, after), _own_demand(before, after)
    if before.ticks is None or after.ticks is None or before.ticks.cores != after.ticks.cores:
        return Interference(window_s, load_1m=after.load_1m, not_measurable="/proc/stat is not readable here",
                            own_cores=own, own_demand_cores=demand)
    cores = after.ticks.cores
    uncertainty_cores = (math.sqrt(cores) + 2) * TICK_S / window_s if window_s > 0 else math.inf
    if uncertainty_cores > MAX_UNCERTAINTY_CORES:
        # who else ran cannot be told from ticks this coarse, but our threads' wait for a CPU can
        # (schedstat counts nanoseconds): a short window is still judged on that
        return Interference(window_s, cores, run_wait_share=_run_wait_share(before, after), load_1m=after.load_1m,
                            not_measurable=(f"a {window_s * 1e3:.0f} ms window is too short for 10 ms CPU-time "
                                            f"ticks on {cores} cores"), own_cores=own, own_demand_cores=demand)
    busy_s = (after.ticks.busy - before.ticks.busy) * TICK_S
    idle_s = (after.ticks.idle - before.ticks.idle) * TICK_S
    steal_s = (after.ticks.steal - before.ticks.steal) * TICK_S
    others_s = max(0.0, busy_s - (after.own_cpu_s - before.own_cpu_s))
    all_s = busy_s + idle_s + steal_s
    ticked_cores = (after.own_cpu_s - before.own_cpu_s) / window_s  # counts threads that ended in the window
    return Interference(window_s, cores, others_s / window_s, idle_s / window_s,
                        steal_s / all_s if all_s > 0 else 0.0, _run_wait_share(before, after), after.load_1m,
                        own_cores=max(own or 0.0, ticked_cores), own_demand_cores=demand)


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
                self.result = between(self._before, snapshot(self.proc))
            except Exception:  # noqa: BLE001
                self.result = None


# -- a run's notice -----------------------------------------------------------------------------

def run_notice(measurements: Iterable[Any], rigor: str | None = None) -> str | None:
    """One line for the top of a run's output when other programs disturbed some of its results;
    `rigor`: the run's, so a rigorous run is not told to use `--rigor rigorous`."""
    longer = "" if rigor == "rigorous" else "use `--rigor rigorous`, "
    shares, steals, waits, total = [], [], [], 0
    for m in measurements:
        total += 1
        compute = (getattr(m, "telemetry", {}) or {}).get("interference", {}).get("compute") or {}
        if compute.get("disturbed") and not compute.get("own_threads"):  # our own threads are not other programs
            shares.append(compute.get("others_share") or 0.0)
            steals.append(compute.get("steal_share") or 0.0)
            waits.append(compute.get("run_wait_share") or 0.0)
    if not shares:
        return None
    others, steal, wait = sum(shares) / len(shares), sum(steals) / len(steals), sum(waits) / len(waits)
    if others < 0.005 and steal < STEAL_LIMIT:  # windows too short for CPU ticks: judged on our threads' wait
        return (f"busy machine: {len(shares)} of {total} results were measured while our threads waited for a "
                f"CPU {wait:.0%} of the time on average (noisy); close other programs or run them under "
                f"`nice -n 19`, {longer}or pin with `taskset -c`")
    if steal >= STEAL_LIMIT and others < OTHERS_CORES_LIMIT / max(1, _usable_cores()):
        return (f"busy host: {len(shares)} of {total} results were measured while the hypervisor took {steal:.0%} "
                f"of this machine's CPU time on average (steal: other virtual machines on the host; noisy); "
                f"{longer.replace(', ', ' or ')}run at a quieter time")
    return (f"busy machine: {len(shares)} of {total} results were measured while other processes used "
            f"{others:.0%} of the cores on average (noisy); close other programs or run them "
            f"under `nice -n 19`, {longer}or pin with `taskset -c`")


def _usable_cores() -> int:
    from accelbench.vocabulary import usable_cpus

    return usable_cpus()


# -- accelerators (from the run's telemetry window) ---------------------------------------------

# slowdowns that come from heat or the board, not from our own load: `sw_power_cap` is left out,
# since a GPU held at its power limit by the benchmark itself is its normal steady state
DEVICE_SLOWDOWNS = ("hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")


def device_reasons(telemetry: dict[str, Any], device: str) -> list[str]:
    """Why an accelerator's window was disturbed: other processes on it (NVML), thermal or board slowdowns."""
    section = (telemetry or {}).get("devices", {}).get(device)
    if not section or device == "cpu":
        return []
    reasons = []
    others = section.get("metrics", {}).get("other_processes", {}).get("max")
    if others:
        reasons.append(f"{others:.0f} other process{'es' if others != 1 else ''} used {device} during this "
                       f"measurement (NVML process list)")
    slowdowns = [r for r in section.get("throttle_reasons") or () if r in DEVICE_SLOWDOWNS]
    if slowdowns:
        reasons.append(f"{device} slowed its clocks during this measurement ({', '.join(slowdowns)})")
    return reasons


# -- a result's verdict -------------------------------------------------------------------------

def attach(measurement: Any, findings: list, windows: dict[str, Interference | None], device: str):
    """The measurement with its windows' figures in telemetry["interference"], and the findings
    with a `noisy` one per disturbed window (the phase named unless it is the compute one)."""
    from accelbench.verdict import NOISY, Finding

    telemetry = dict(measurement.telemetry)
    found = [Finding(NOISY, ("" if phase == "compute" else f"{phase}: ") + window.text())
             for phase, window in windows.items() if window is not None and window.disturbed]
    found += [Finding(NOISY, reason) for reason in device_reasons(telemetry, device)]
    telemetry["interference"] = {phase: w.to_dict() for phase, w in windows.items() if w is not None}
    return dataclasses.replace(measurement, telemetry=telemetry), found + list(findings)  # the cause first
