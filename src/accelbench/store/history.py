"""A spec's history on one machine: its median time in each earlier stored run (read only).

`accelbench compare` reads how far a spec's median moves between runs of the same host from it
(compare/noise.py), so a change is only called real when it is larger than that.
"""
from __future__ import annotations

from collections.abc import Iterable

from accelbench.store.db import Store
from accelbench.store.schema import measurement_from_row
from accelbench.timing import stats

MAX_RUNS = 20  # the latest runs only: a machine's noise from a year ago says little about today


def spec_medians(store: Store, hostname: str, spec_keys: Iterable[str], *, started_until: str,
                 exclude_run_ids: Iterable[str] = (), max_runs: int = MAX_RUNS) -> dict[str, list[float]]:
    """Spec key -> median seconds of each stored run on `hostname` that measured it with a valid
    verdict (not noisy, check passed), started at or before `started_until`, newest first."""
    keys = sorted(set(spec_keys))
    if not keys or not hostname:
        return {}
    excluded = sorted(set(exclude_run_ids)) or [""]
    rows = store._connection().execute(  # a read-only query beside the Store's own
        "SELECT r.* FROM results r JOIN runs ON runs.id = r.run_id JOIN machines m ON m.run_id = r.run_id "
        f"WHERE m.hostname = ? AND r.spec_key IN ({', '.join('?' for _ in keys)}) "
        f"AND r.run_id NOT IN ({', '.join('?' for _ in excluded)}) AND runs.started_at <= ? "
        "AND r.check_passed = 1 AND r.verdict IN ('valid', '') ORDER BY runs.started_at DESC, r.id DESC",
        (hostname, *keys, *excluded, started_until))
    medians: dict[str, list[float]] = {}
    seen: set[tuple[str, str]] = set()
    for row in rows:
        key, run_id = row["spec_key"], row["run_id"]
        if (key, run_id) in seen or len(medians.get(key, ())) >= max_runs:
            continue  # a spec measured twice in one run counts once (its last result)
        seen.add((key, run_id))
        measurement = measurement_from_row(row)
        if measurement.trusted and measurement.samples_s:
            medians.setdefault(key, []).append(stats.median(measurement.samples_s))
    return medians
