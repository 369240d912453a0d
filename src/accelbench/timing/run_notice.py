"""One line for the top of a run's output when other programs disturbed some of its results."""
from __future__ import annotations

from typing import Any, Iterable

from accelbench.timing.contention_limits import OTHERS_CORES_LIMIT, STEAL_LIMIT


def run_notice(measurements: Iterable[Any], rigor: str | None = None) -> str | None:
    """One line for the top of a run's output when other programs disturbed some of its results;
    `rigor`: the run's, so a rigorous run is not told to use `--rigor rigorous`."""
    longer = "" if rigor == "rigorous" else "use `--rigor rigorous`, "
    shares, steals, waits, total, disturbed = [], [], [], 0, 0
    named: dict[str, int] = {}
    for m in measurements:
        total += 1
        compute = (getattr(m, "telemetry", {}) or {}).get("interference", {}).get("compute") or {}
        if compute.get("disturbed") and not compute.get("own_threads"):  # our own threads are not other programs
            disturbed += 1
            # a window too short for CPU-time ticks has no share: it is no 0% in the average
            if compute.get("others_share") is not None:
                shares.append(compute["others_share"])
                steals.append(compute.get("steal_share") or 0.0)
            if compute.get("run_wait_share") is not None:
                waits.append(compute["run_wait_share"])
            if compute.get("top_other"):
                named[compute["top_other"]] = named.get(compute["top_other"], 0) + 1
    if not disturbed:
        return None
    # the program that took the most CPU in most of the disturbed windows, where one could be seen
    culprit = f" (most often {max(named, key=lambda name: named[name])})" if named else ""
    waited = f"our threads waited for a CPU {sum(waits) / len(waits):.0%} of the time on average" if waits else (
        "other processes or the host took CPU time from our threads")
    others, steal = (sum(shares) / len(shares), sum(steals) / len(steals)) if shares else (0.0, 0.0)
    if others < 0.005 and steal < STEAL_LIMIT:  # windows too short for CPU ticks: judged on our threads' wait
        return (f"busy machine: {disturbed} of {total} results were measured while {waited}{culprit} (noisy); "
                f"close other programs or run them under `nice -n 19`, {longer}or pin with `taskset -c`")
    if steal >= STEAL_LIMIT and others < OTHERS_CORES_LIMIT / max(1, _usable_cores()):
        return (f"busy host: {disturbed} of {total} results were measured while the hypervisor took {steal:.0%} "
                f"of this machine's CPU time on average (steal: other virtual machines on the host; noisy); "
                f"{longer.replace(', ', ' or ')}run at a quieter time")
    measured = "" if len(shares) == disturbed else f", in the {len(shares)} windows long enough to tell"
    return (f"busy machine: {disturbed} of {total} results were measured while other processes used "
            f"{others:.0%} of the cores on average{measured}{culprit} (noisy); close other programs or run them "
            f"under `nice -n 19`, {longer}or pin with `taskset -c`")


def _usable_cores() -> int:
    from accelbench.vocabulary import usable_cpus

    return usable_cpus()
