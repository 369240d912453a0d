"""One benchmark run from start to finish: plan, record the machine, execute, store, summarise.

Used by `accelbench run` and by the Python API (`accelbench.run`).
"""
from __future__ import annotations

import os
import platform
import socket
import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable

from accelbench._version import __version__
from accelbench.devices.blas import thread_environment
from accelbench.devices.model import Device
from accelbench.results import Measurement, PairedSamples, Skip
from accelbench.runner import deadline
from accelbench.report.analysis import Row, analyse
from accelbench.runner.execute import TrustContext, execute
from accelbench.runner.plan import Plan, build_plan
from accelbench.runner.reach import unreached_records
from accelbench.vocabulary import DEFAULT_SEED


@dataclass
class RunResults:
    """What a run produced: its id, verified (and failed) measurements, skips, derived rows."""

    run_id: str
    db_path: str
    measurements: list[Measurement]
    skips: list[Skip]
    devices: dict[str, Device] = field(default_factory=dict)
    interrupted: bool = False
    machine: dict[str, Any] = field(default_factory=dict)
    rigor: str | None = None
    paired: list[PairedSamples] = field(default_factory=list)  # speed-ups' interleaved rounds
    started_at: str | None = None  # as stored (ISO 8601, UTC)

    def _repr_html_(self) -> str:
        from accelbench.report.compare import results_table_html

        return results_table_html(self.rows)

    def findings(self) -> list:
        """What the measurements support saying (accelbench.report.advice), warnings first."""
        from accelbench.report.advice import findings

        return findings(self.rows, self.devices, self.machine, rigor=self.rigor)

    def headline(self):
        """The answer first (accelbench.report.headline): each device against the CPU, and how sure."""
        from accelbench.report.headline import headline_for_run

        return headline_for_run(self.rows, self.devices, self.machine, rigor=self.rigor)

    @property
    def rows(self) -> list[Row]:
        return analyse(self.measurements, self.devices, self.paired)

    def to_records(self) -> list[dict[str, Any]]:
        """One tidy record per result: the columns of `accelbench export --format csv`
        (docs/results-schema.md), rates in GFLOP/s or GB/s as `rate_unit` says."""
        from accelbench.report.tidy import tidy_records

        return tidy_records(self.rows, run_id=self.run_id, started_at=self.started_at,
                            host=self.machine.get("hostname"))

    def to_pandas(self):
        import pandas as pd  # only for users who ask for a DataFrame

        from accelbench.report.tidy import TIDY_COLUMNS

        return pd.DataFrame.from_records(self.to_records(), columns=list(TIDY_COLUMNS))

    def to_dict(self) -> dict[str, Any]:
        """The `run --json` document (docs/results-schema.md): the headline, raw samples and derived figures."""
        from accelbench.report.derived import RESULTS_SCHEMA_VERSION, finite, result_entry

        return {"schema_version": RESULTS_SCHEMA_VERSION, "run_id": self.run_id, "started_at": self.started_at,
                "db": self.db_path, "interrupted": self.interrupted,
                "headline": finite(self.headline().to_dict()),
                "results": [result_entry(row) for row in self.rows],
                "findings": finite([f.to_dict() for f in self.findings()]),
                "skips": [s.to_dict() for s in self.skips]}


class BrokenBackend:
    """Stands in for a backend whose module failed to load: unavailable, with the reason."""

    def __init__(self, name: str, reason: str):
        self.name, self.reason = name, reason

    def availability(self):
        from accelbench.backends.base import Availability
        return Availability(False, self.reason)

    def device_ids(self) -> list[str]:
        return []


def load_backends(names: list[str] | None = None) -> dict:
    from accelbench.backends.registry import BackendLoadError, default_backend_names, get_backend

    loaded: dict[str, Any] = {}  # Backend, or a BrokenBackend saying why it did not load
    for name in names or default_backend_names():
        try:
            loaded[name] = get_backend(name)
        except BackendLoadError as exc:
            loaded[name] = BrokenBackend(name, str(exc))
    return loaded


def machine_record(backends: dict, inventory) -> dict[str, Any]:
    software = {"accelbench": __version__, "python": sys.version.split()[0]}
    for backend in backends.values():
        try:
            if backend.availability().ok:
                software.update(backend.versions())
        except Exception:  # noqa: BLE001 - versions are for the record, never a reason to fail
            continue
    return {
        "hostname": socket.gethostname(), "os": f"{platform.system()} {platform.release()}",
        "python": sys.version.split()[0], "inventory": inventory.to_dict(), "software": software,
        "environment": {**thread_environment(), **inventory.environment},
        "unreached_devices": unreached_records(inventory, backends),
    }


TELEMETRY_INTERVAL_S = 0.1


@contextmanager
def _telemetry(plan: Plan, enabled: bool):
    """A background sampler over the devices in the plan (and the CPU that drives them)."""
    if not enabled or not plan.items:
        yield None
        return
    from accelbench.telemetry import TelemetrySampler

    sampler = TelemetrySampler(sorted({i.spec.device for i in plan.items} | {"cpu"}),
                               interval_s=TELEMETRY_INTERVAL_S).start()
    try:
        yield sampler
    finally:
        sampler.stop()


def run_plan(plan: Plan, backends: dict, *, rigor, db: str | None = None, seed: int = DEFAULT_SEED,
             selection: dict | None = None, tags: dict | None = None, inventory=None,
             on_start: Callable | None = None, on_done: Callable | None = None, debug: bool = False,
             telemetry: bool = True, timeout: float | None = deadline.DEFAULT_SPEC_TIMEOUT_S) -> RunResults:
    """`timeout`: seconds each spec may take before it is ended and stored as failed (None: no limit)."""
    from accelbench.store.ceilings import measured_inventory
    from accelbench.store.db import Store
    from accelbench.timing import machine_reference

    inventory = inventory or measured_inventory(db_path=db)
    machine = machine_record(backends, inventory)
    reference = machine_reference.RunReadings(len(plan.items))  # compare: the machine's own change
    machine[machine_reference.KEY] = reference.start()
    with Store(db) as store:
        run_id = store.start_run(machine,
                                 {**(selection or {}), "seed": seed, "rigor": getattr(rigor, "name", rigor)}, tags)
        with deadline.stop_on_signals(), deadline.spec_timeout(timeout), _telemetry(plan, telemetry) as sampler:
            outcome = execute(plan, backends, store, run_id, rigor, seed=seed, on_start=on_start,
                              on_done=reference.after_each(on_done), debug=debug, sampler=sampler,
                              trust=TrustContext(devices={d.id: d for d in inventory.devices}))
            if not outcome.interrupted:
                outcome.interrupted = _paired_rounds(outcome, backends, store, run_id, rigor, seed)
        paired = store.speedups(run_id)  # what was stored, also when a stop came during pairing
        if not outcome.interrupted:
            machine[machine_reference.KEY] = reference.end()
            store.update_machine(run_id, machine)  # the middle and end readings join the stored snapshot
        store.finish_run(run_id, "interrupted" if outcome.interrupted else "complete")
        path, started_at = str(store.path), store.run_info(run_id).started_at
    return RunResults(run_id, path, outcome.measurements, outcome.skips,
                      {d.id: d for d in inventory.devices}, outcome.interrupted, machine,
                      getattr(rigor, "name", rigor), paired, started_at=started_at)


def _paired_rounds(outcome, backends: dict, store, run_id: str, rigor, seed: int) -> bool:
    """Every speed-up timed again in interleaved rounds (runner/pairing.py); True if stopped."""
    from accelbench.runner.pairing import pair_speedups

    try:
        pair_speedups(outcome.measurements, backends, store, run_id, rigor, seed=seed)
    except KeyboardInterrupt:
        return True
    return False


def run(workloads: list[str] | str | None = None, *, sizes: list[int] | None = None,
        dtypes: list[str] | str | None = None, devices: list[str] | str | None = None,
        backends: list[str] | str | None = None, rigor: str = "quick", quick: bool | None = None,
        db: str | None = None, seed: int = DEFAULT_SEED, tags: dict | None = None,
        timeout: float | None = deadline.DEFAULT_SPEC_TIMEOUT_S) -> RunResults:
    """Run workloads across devices from Python; returns RunResults (`.to_pandas()` for a DataFrame).

    `timeout`: seconds each spec may take; one that takes longer is stored as failed and the run
    goes on (None: no limit).

    >>> results = accelbench.run("matmul", sizes=[500], dtypes="float32", devices="cpu")  # doctest: +SKIP
    """
    from accelbench.store.ceilings import measured_inventory

    def listify(v: str | list[str] | None) -> list[str] | None:
        return [v] if isinstance(v, str) else v
    loaded = load_backends(listify(backends))
    host_memory = _host_memory_bytes()
    inventory = measured_inventory(db_path=db)
    plan = build_plan(listify(workloads), sizes=sizes, dtypes=listify(dtypes), devices=listify(devices),
                      backends=loaded, quick=(rigor == "quick") if quick is None else quick,
                      host_memory_bytes=host_memory, known_devices={d.id for d in inventory.devices})
    selection = {"workloads": listify(workloads), "sizes": sizes, "dtypes": listify(dtypes),
                 "devices": listify(devices), "backends": listify(backends),
                 "via": "python"}  # `latest` on the command line means the command line's runs
    return run_plan(plan, loaded, rigor=rigor, db=db, seed=seed, selection=selection, tags=tags,
                    inventory=inventory, timeout=timeout)


def _host_memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
