"""Energy over a window: counter differences where the hardware counts, integrated power otherwise.

A counter (NVML total energy, RAPL, amdsmi) is read at the window's first and last instant, and at
every poll in between so that a RAPL counter wrapping more than once is still counted right. Its
error is at most one refresh period's worth of energy at each edge, so a window shorter than
`MIN_UPDATES` refreshes gets no figure, with the reason, instead of a number that is mostly noise.
Without a counter, power samples are integrated (trapezoids); the uncertainty counts what the
samples cannot see: the unsampled edges and the change between neighbouring samples.
"""
from __future__ import annotations

import time
from collections import defaultdict
from typing import Any, Callable, Iterable, Mapping, Sequence

from accelbench.telemetry.model import CounterReading
from accelbench.units import format_seconds

MAX_RELATIVE_UNCERTAINTY = 0.10
# both edges can miss up to one refresh each: 2 u / T <= 10% needs T >= 20 u
MIN_UPDATES = 2 / MAX_RELATIVE_UNCERTAINTY


def counter_delta_j(before: CounterReading, after: CounterReading) -> float | None:
    """Energy between two reads of one counter; wrap-around handled; None when it went backwards
    without a known range (the driver was reloaded and the counter restarted)."""
    delta = after.energy_j - before.energy_j
    if delta >= 0:
        return delta
    if before.wrap_j:
        return delta + before.wrap_j
    return None


def _ms(value_s: float) -> str:
    return format_seconds(value_s)


def counter_energy(readings: Sequence[CounterReading], window_s: float) -> dict[str, Any]:
    """Energy over the window from the readings of one device's counters (chronological)."""
    by_counter: dict[str, list[CounterReading]] = defaultdict(list)
    for reading in readings:
        by_counter[reading.counter].append(reading)
    update_s = max(r.update_period_s for r in readings)
    minimum_s = MIN_UPDATES * update_s
    names = ", ".join(sorted(by_counter))
    if window_s < minimum_s:
        return _no_energy(
            f"the {_ms(window_s)} window is shorter than {_ms(minimum_s)}, {MIN_UPDATES:.0f} refreshes of "
            f"{names} (refreshed about every {_ms(update_s)}): the counter cannot resolve it to "
            f"{MAX_RELATIVE_UNCERTAINTY:.0%}", "counter difference")
    per_counter: dict[str, float] = {}
    for name, series in by_counter.items():
        total = _sum_deltas(series)
        if total is None:
            return _no_energy(f"{name} went backwards during the window (driver reloaded or counter reset)",
                              "counter difference")
        per_counter[name] = total
    energy_j = sum(v for k, v in per_counter.items() if by_counter[k][0].in_total)
    if energy_j == 0:
        return _no_energy(f"{names} did not advance during the {_ms(window_s)} window: the counter is stuck "
                          "(some boards and VM guests never update it)", "counter difference")
    mean_power_w = energy_j / window_s if window_s > 0 else 0.0
    result = {"energy_j": energy_j, "energy_uncertainty_j": 2 * update_s * mean_power_w,
              "energy_method": f"counter difference ({names})", "mean_power_w": mean_power_w}
    if len(per_counter) > 1:
        result["energy_by_counter_j"] = per_counter
    return result


def _sum_deltas(series: Sequence[CounterReading]) -> float | None:
    if len(series) < 2:
        return None
    total = 0.0
    for before, after in zip(series, series[1:]):
        delta = counter_delta_j(before, after)
        if delta is None:
            return None
        total += delta
    return total


def integrated_energy(samples: Iterable[tuple[float, float]], t0_s: float, t1_s: float, *,
                      sensor_period_s: float | None = None, accuracy: float | None = None) -> dict[str, Any]:
    """Energy from power samples (t_s, power_w) inside [t0_s, t1_s], trapezoid rule.

    The edges before the first and after the last sample are extended flat; the uncertainty adds,
    for those edges, the spread of power seen, and for each interval half the change across it.
    """
    points = sorted((t, p) for t, p in samples if t0_s <= t <= t1_s)
    window_s = t1_s - t0_s
    if len(points) < 2:
        return _no_energy(f"only {len(points)} power sample(s) in the {_ms(window_s)} window and no energy "
                          "counter: too few to integrate", "integrated power")
    period_s = _median([b[0] - a[0] for a, b in zip(points, points[1:])])
    sensor_s = max(period_s, sensor_period_s or 0.0)
    if window_s < 2 * sensor_s:
        return _no_energy(f"the {_ms(window_s)} window is shorter than two power-sensor periods "
                          f"({_ms(sensor_s)} each): too short to integrate", "integrated power")
    powers = [p for _, p in points]
    inner_j = sum((b[0] - a[0]) * (a[1] + b[1]) / 2 for a, b in zip(points, points[1:]))
    edges_s = (points[0][0] - t0_s) + (t1_s - points[-1][0])
    energy_j = inner_j + (points[0][0] - t0_s) * points[0][1] + (t1_s - points[-1][0]) * points[-1][1]
    uncertainty_j = edges_s * (max(powers) - min(powers))
    uncertainty_j += sum((b[0] - a[0]) * abs(b[1] - a[1]) / 2 for a, b in zip(points, points[1:]))
    if accuracy:
        uncertainty_j += accuracy * energy_j
    return {"energy_j": energy_j, "energy_uncertainty_j": uncertainty_j,
            "energy_method": f"integrated power ({len(points)} samples about every {_ms(period_s)})",
            "power_sampling_period_s": period_s, "mean_power_w": energy_j / window_s,
            "energy_note": ("power changes faster than the sampling period are not seen"
                            + (f"; includes the sensor's stated ±{accuracy:.0%}" if accuracy else ""))}


def _median(values: Sequence[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def _no_energy(reason: str, method: str) -> dict[str, Any]:
    return {"energy_j": None, "energy_method": method, "energy_reason": reason}


def rate_w(before: CounterReading, after: CounterReading) -> float | None:
    """Mean power between two reads of a counter (a rate from two samples)."""
    elapsed_s = after.t_s - before.t_s
    delta = counter_delta_j(before, after)
    if delta is None or elapsed_s <= 0:
        return None
    return delta / elapsed_s


def time_refresh(readers: Mapping[str, Callable[[], object]], budget_s: float,
                 clock: Callable[[], float] = time.perf_counter) -> dict[str, float | None]:
    """How often each counter refreshes: the median gap between the changes seen while reading all of
    them in a tight loop for at most budget_s. None for a counter seen to change fewer than 3 times."""
    ticks: dict[str, list[float]] = {name: [] for name in readers}
    last: dict[str, object] = {}  # compared for change only
    deadline = clock() + budget_s
    while readers and clock() < deadline and any(len(t) < 5 for t in ticks.values()):
        for name, read in readers.items():
            try:
                value = read()
            except Exception:  # noqa: BLE001 - a counter that fails here is simply not timed
                continue
            if name in last and value != last[name]:
                ticks[name].append(clock())
            last[name] = value
        time.sleep(0.0005)
    refresh: dict[str, float | None] = {}
    for name, times in ticks.items():
        gaps = sorted(b - a for a, b in zip(times, times[1:]))
        refresh[name] = gaps[len(gaps) // 2] if len(gaps) >= 2 else None
    return refresh
