"""What a report is made of: stored runs read back as analysed rows, their devices and machine.

Devices are rebuilt from the inventory snapshot stored with each run, so a report made years
later shows the peaks the run was compared with, not what the current machine reports.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Iterable, Sequence

from accelbench.runner.answer_scope import SIZE_PARAMS, size_of  # noqa: F401 - re-exported
from accelbench.devices.model import Device, device_from_dict
from accelbench.results import Measurement, Skip
from accelbench.report.analysis import Row, analyse
from accelbench.vocabulary import ITEMSIZE



@dataclass
class RunData:
    """One stored run: its results, skips and machine snapshot, the devices rebuilt from that
    snapshot and, for a report, its analysed rows. Read from a database (load_run here, or
    report/compare/sources.py) or from an exported file (report/compare/sources.py)."""

    run_id: str
    info: Any = None                 # store.db.RunInfo, where the run was read from a database
    machine: dict[str, Any] = field(default_factory=dict)
    measurements: Sequence[Measurement] = ()
    skips: list[Skip] = field(default_factory=list)
    devices: dict[str, Device] = field(default_factory=dict)   # rebuilt from `machine` when not given
    rows: list[Row] = field(default_factory=list)
    colours: dict[str, str] = field(default_factory=dict)  # series label -> colour, one mapping per report
    source: str = ""                 # the database or file it was read from
    selection: dict[str, Any] = field(default_factory=dict)
    accelbench_version: str = ""
    started_at: str = ""
    status: str = "complete"

    def __post_init__(self) -> None:
        if not self.devices:
            self.devices = devices_from_machine(self.machine)

    @property
    def hostname(self) -> str:
        return str(self.machine.get("hostname") or getattr(self.info, "hostname", "") or "")

    def device_records(self) -> dict[str, dict[str, Any]]:
        """Device id -> the inventory's record of it (name, properties, peaks), as stored."""
        inventory = self.machine.get("inventory") or {}
        return {str(d.get("id")): d for d in inventory.get("devices", []) if isinstance(d, dict)}

    def device_name(self, device_id: str) -> str:
        device = self.devices.get(device_id)
        return device.name if device is not None and device.name else device_id

    @property
    def label(self) -> str:
        status = "" if self.status == "complete" else f", {self.status}"  # an interrupted run is partial
        return f"{self.run_id} ({self.hostname or 'unknown host'}{status})"


def devices_from_machine(machine: dict[str, Any]) -> dict[str, Device]:
    inventory = machine.get("inventory") or {}
    devices = {}
    for entry in inventory.get("devices", ()):
        try:
            device = device_from_dict(entry)
        except (KeyError, TypeError, ValueError):
            continue  # a damaged entry: the report still shows the results, without that device's peaks
        devices[device.id] = device
    return devices


def load_run(store, run_id: str) -> RunData:
    machine = store.machine(run_id)
    devices = devices_from_machine(machine)
    measurements, info = store.results(run_id), store.run_info(run_id)
    return RunData(run_id=run_id, info=info, machine=machine, measurements=measurements, skips=store.skips(run_id),
                   devices=devices, rows=analyse(measurements, devices, store.speedups(run_id)),
                   source=str(store.path), selection=dict(info.selection), accelbench_version=info.accelbench_version,
                   started_at=info.started_at, status=info.status)


def load_runs(store, refs: Iterable[str]) -> list[RunData]:
    """Resolve each ref (latest, latest~N, an id or a unique prefix) once, in the order given;
    several runs of a database file are read and analysed on the usable cores (accelbench.forked),
    each worker with its own connection (an SQLite connection must not cross a fork)."""
    from accelbench import forked

    seen: list[str] = []
    for ref in refs:
        run_id = store.resolve_run(ref)
        if run_id not in seen:
            seen.append(run_id)
    if len(seen) < 2 or not Path(store.path).is_file() or not forked.worker_count(len(seen)):
        return [load_run(store, run_id) for run_id in seen]
    return forked.forked_map(partial(_load_from_file, str(store.path)), seen)


def _load_from_file(path: str, run_id: str) -> RunData:
    from accelbench.store.db import Store

    with Store(path, create=False, notify=lambda _: None) as store:
        return load_run(store, run_id)


# -- grouping helpers shared by figures and advice --------------------------------------------

def series_label(spec) -> str:
    """How a device/backend combination is named in legends: 'numpy@cpu (2 threads)'."""
    threads = spec.param("threads")
    suffix = f" ({threads} thread{'s' if threads != 1 else ''})" if threads else ""
    return f"{spec.backend}@{spec.device}{suffix}"


def matmul_footprint_bytes(n: int, dtype: str) -> int:
    """A, B and C: 3 × n² × itemsize, the memory the seed 000 chart labels each order with."""
    return 3 * int(n) ** 2 * ITEMSIZE.get(dtype, 8)


def valid_rows(rows: Iterable[Row], workload: str | None = None) -> list[Row]:
    return [r for r in rows if r.measurement.valid and (workload is None or r.spec.workload == workload)]


def trusted_rows(rows: Iterable[Row], workload: str | None = None) -> list[Row]:
    """Rows whose verdict is plainly `valid`: the only ones a figure may call a measured ceiling."""
    return [r for r in rows if r.measurement.trusted and (workload is None or r.spec.workload == workload)]


def matmul_series(rows: Iterable[Row]) -> dict[str, dict[str, list[Row]]]:
    """{dtype: {series label: rows sorted by n}} for valid matmul results."""
    grouped: dict[str, dict[str, list[Row]]] = defaultdict(lambda: defaultdict(list))
    for row in valid_rows(rows, "matmul"):
        grouped[str(row.spec.param("dtype"))][series_label(row.spec)].append(row)
    return {dtype: {label: sorted(items, key=lambda r: size_of(r.spec) or 0) for label, items in by.items()}
            for dtype, by in grouped.items()}


def phase_median_s(row: Row, phase: str) -> float | None:
    from accelbench.timing import stats

    samples = row.measurement.phases_s.get(phase)
    return stats.median(samples) if samples else None


def transfer_share(row: Row) -> float | None:
    """Share of the end-to-end time spent moving data: (to_device + to_host) / end_to_end."""
    end_to_end_s = phase_median_s(row, "end_to_end")
    moves = [phase_median_s(row, p) for p in ("to_device", "to_host")]
    if not end_to_end_s or all(m is None for m in moves):
        return None
    return min(1.0, sum(m for m in moves if m) / end_to_end_s)
