"""What a healthy device should reach, and where that came from, best-founded first.

This machine's own history (its measured ceiling in the results database) is the sharpest
reference, then this node type's fleet median (sweeps gathered into the database), then the
datasheet, then the formula. Each source has its own tolerance: a formula peak is a ceiling no
real code reaches, a machine's own best is a figure it reached before.
"""
from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Callable

from accelbench.health.model import DATASHEET, FLEET, FORMULA, HISTORY, LINK, THEORY

# (warn below, fail below) as a share of the expected figure, per source
# (channel theory never fails alone: a few threads cannot fill every channel)
TOLERANCES = {HISTORY: (0.8, 0.5), FLEET: (0.8, 0.55), DATASHEET: (0.5, 0.25), FORMULA: (0.5, 0.3),
              THEORY: (0.25, 0.0), LINK: (0.6, 0.35)}
MIN_FLEET_NODES = 3   # a median of fewer nodes cannot tell which one is off


@dataclass(frozen=True)
class Expected:
    value: float
    source: str
    detail: str

    @property
    def warn_below(self) -> float:
        return TOLERANCES[self.source][0]

    @property
    def fail_below(self) -> float:
        return TOLERANCES[self.source][1]


def from_device(device, metric: str, scale: float = 1.0, scale_note: str = "") -> list[Expected]:
    """The device's peaks for `metric` (measured, table, formula), each scaled (e.g. to the cores
    this process may use)."""
    found = []
    for provenance, source in (("measured", HISTORY), ("table", DATASHEET), ("formula", FORMULA)):
        peak = device.peak(metric, provenance) if device is not None else None
        if peak is not None and peak.value > 0:
            note = f"; × {scale:.2g} ({scale_note})" if scale != 1.0 else ""
            found.append(Expected(peak.value * scale, source, peak.detail + note))
    return found


def best(candidates: list[Expected]) -> Expected | None:
    order = (HISTORY, FLEET, DATASHEET, FORMULA, LINK, THEORY)
    return min(candidates, key=lambda e: order.index(e.source), default=None)


def own_history(db_path: str | None, hostname: str, devices: dict, matches: Callable, rate: Callable,
                what: str) -> Expected | None:
    """The best rate this machine reached before on the check's own step (`matches`: the same
    workload, kernel or dtype, thread count, and working set), from results measured here that
    may set a ceiling; None without one. Not the device's overall measured ceiling: that is the
    best of every kernel, size and thread count, and a triad judged against a copy, or a 2^23
    array against a cache-resident one, would fail a healthy machine."""
    from accelbench.store.ceilings import why_not_a_ceiling
    from accelbench.store.db import Store
    from accelbench.store.paths import resolve_db_path

    path = resolve_db_path(db_path)
    if not path.is_file():  # a check never creates a database
        return None
    found: tuple[float, str, str] | None = None
    try:
        with Store(path, create=False) as store:
            for m, run_id in store.ceiling_candidates(hostname):
                value = rate(m) if matches(m) and why_not_a_ceiling(m, devices) is None else None
                if value and (found is None or value > found[0]):
                    found = (value, m.spec.label(), run_id)
    except Exception:  # noqa: BLE001 - a database of another version, or unreadable: no history
        return None
    if found is None:
        return None
    return Expected(found[0], HISTORY, f"this machine's best {what} before: {found[1]} in run {found[2]}")


def fleet_median(db_path: str | None, hostname: str, matches: Callable, rate: Callable) -> Expected | None:
    """The median over the nodes of this node's type (its `node_features` tag in gathered sweeps)
    of each node's best valid rate for results that `matches`; None without enough nodes."""
    from accelbench.store.db import Store

    try:
        store = Store(db_path, create=False)  # a check never creates a database
    except Exception:  # noqa: BLE001 - no database, or none readable: no fleet reference
        return None
    try:
        runs = [r for r in store.runs() if r.tags.get("node") and r.tags.get("node_features")]
        mine = next((r.tags["node_features"] for r in runs if r.tags["node"] == hostname), None)
        best_by_node: dict[str, float] = {}
        for run in (r for r in runs if mine is not None and r.tags["node_features"] == mine):
            for m in store.results(run.id):
                value = rate(m) if m.trusted and matches(m) else None
                if value and value > best_by_node.get(run.tags["node"], 0.0):
                    best_by_node[run.tags["node"]] = value
    except Exception:  # noqa: BLE001 - a database of another version: no fleet reference
        return None
    finally:
        store.close()
    if len(best_by_node) < MIN_FLEET_NODES:
        return None
    return Expected(statistics.median(best_by_node.values()), FLEET,
                    f"median of {len(best_by_node)} nodes of type {mine!r} in gathered sweeps")

