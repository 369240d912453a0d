"""One benchmark run from start to finish: plan, record the machine, execute, store, summarise.

Used by `accelbench run` and by the Python API (`accelbench.run`).
"""
from __future__ import annotations

import os
import platform
import socket
import sys
from contextlib import contextmanager
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from accelbench._version import __version__
from accelbench.backends.base import Backend
from accelbench.backends.registry import BrokenBackend, Listed
from accelbench.devices.blas import thread_environment
from accelbench.devices.model import Device, repeated_host_cpus
from accelbench.errors import UsageError
from accelbench.results import Measurement, PairedSamples, Skip, Spec
from accelbench.runner import deadline
from accelbench.report.analysis import Row, analyse
from accelbench.runner.execute import Outcome, TrustContext, execute, measure_again
from accelbench.runner.plan import MAX_SIZE, Plan, PlanItem, build_plan
from accelbench.runner.reach import unreached_records
from accelbench.runner.run_config import RunConfig
from accelbench.timing.rigor import Rigor, get_rigor
from accelbench.vocabulary import DEFAULT_SEED, usable_cpus

if TYPE_CHECKING:
    from accelbench.devices.inventory import Inventory
    from accelbench.store.db import Store
    from accelbench.telemetry.sampler import TelemetrySampler

# what an invalid result has no figure for in to_pandas(): its time and rate count nowhere
NOT_COUNTED = ("median_s", "ci_low_s", "ci_high_s", "relative_spread", "rate", "percent_of_measured_peak",
               "percent_of_datasheet_peak", "end_to_end_median_s", "transfer_percent_of_end_to_end")


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

    def __repr__(self) -> str:
        """A few lines, the answer first: state, counts, each device against the CPU, each result
        (up to 8), failures and skips. Every figure: `.to_pandas()`; the full table: `_repr_html_`."""
        from accelbench.report.notebook import run_text

        rows = self.rows
        return run_text(self, rows, self._answer(rows))

    def _repr_html_(self) -> str:
        from accelbench.report.notebook import run_html

        rows = self.rows
        return run_html(self, rows, self._answer(rows))

    def _answer(self, rows: list[Row]):
        from accelbench.report.headline import headline_for_run

        return headline_for_run(rows, self.devices, self.machine, rigor=self.rigor)

    def findings(self) -> list:
        """What the measurements support saying (accelbench.report.advice), warnings first."""
        from accelbench.report.advice import findings
        from accelbench.report.findings import Findings

        return Findings(findings(self.rows, self.devices, self.machine, rigor=self.rigor))

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
        """The tidy table (the CSV's columns, docs/results-schema.md), safe to aggregate: an invalid
        result has no time and no rate (NaN in NOT_COUNTED; `verdict` and `verdict_reasons` say why;
        `to_records()` and the CSV keep its raw median); `threads` is an integer, the CPU threads a
        result ran with, 0 for a device accelbench sets no threads for (a GPU); `series` names each
        line: "numpy@cpu (1 thread)"."""
        import pandas as pd  # only for users who ask for a DataFrame

        from accelbench.report.tidy import TIDY_COLUMNS

        frame = pd.DataFrame.from_records(self.to_records(), columns=list(TIDY_COLUMNS))
        frame.loc[frame["verdict"] == "invalid", list(NOT_COUNTED)] = float("nan")
        frame["threads"] = pd.to_numeric(frame["threads"]).fillna(0).astype("int64")
        return frame

    def to_dict(self) -> dict[str, Any]:
        """The `run --json` document (docs/results-schema.md): the headline, raw samples and derived figures."""
        from accelbench.report.derived import RESULTS_SCHEMA_VERSION, finite, result_entry

        return {"schema_version": RESULTS_SCHEMA_VERSION, "run_id": self.run_id, "started_at": self.started_at,
                "db": self.db_path, "interrupted": self.interrupted,
                "headline": finite(self.headline().to_dict()),
                "results": [result_entry(row) for row in self.rows],
                "findings": finite([f.to_dict() for f in self.findings()]),
                "skips": [s.to_dict() for s in self.skips]}


def load_backends(names: list[str] | None = None) -> dict[str, Backend | BrokenBackend]:
    from accelbench.backends.registry import BackendLoadError, default_backend_names, get_backend

    loaded: dict[str, Backend | BrokenBackend] = {}  # Backend, or a BrokenBackend saying why it did not load
    for name in names or default_backend_names():
        try:
            loaded[name] = get_backend(name)
        except BackendLoadError as exc:
            loaded[name] = BrokenBackend(name, str(exc))
    return loaded


def machine_record(backends: Listed, inventory: Inventory) -> dict[str, Any]:
    software = {"accelbench": __version__, "python": sys.version.split()[0]}
    for backend in backends.values():
        try:
            if isinstance(backend, Backend) and backend.availability().ok:
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


def run_plan(plan: Plan, backends: Listed, config: RunConfig) -> RunResults:
    """Measure `plan` with `backends` as `config` says, storing each result as it is made."""
    from accelbench.runner import memory_release

    try:
        return _run_plan(plan, backends, config)
    finally:
        memory_release.thaw()  # what the run froze between specs is collected again after it


def _run_plan(plan: Plan, backends: Listed, config: RunConfig) -> RunResults:
    from accelbench.store.ceilings import measured_inventory
    from accelbench.store.db import Store
    from accelbench.timing import machine_reference

    rigor, seed = config.rigor, config.seed
    inventory = config.inventory or measured_inventory(db_path=config.db)
    machine = machine_record(backends, inventory)
    usable = {name: b for name, b in backends.items() if isinstance(b, Backend)}  # a broken one has no spec
    reference = machine_reference.RunReadings(len(plan.items))  # compare: the machine's own change
    machine[machine_reference.KEY] = reference.start()
    with Store(config.db) as store:
        run_id = store.start_run(machine, {**config.selection, "seed": seed, "rigor": rigor.name}, config.tags)
        with (deadline.stop_on_signals(), deadline.spec_timeout(config.timeout),
              _telemetry(plan, config.telemetry) as sampler):
            trust = TrustContext(devices={d.id: d for d in inventory.devices})
            outcome = execute(plan, usable, store, run_id, rigor, seed=seed, on_start=config.on_start,
                              on_done=reference.after_each(config.on_done), debug=config.debug, sampler=sampler,
                              trust=trust)
            if not outcome.interrupted:
                outcome.interrupted = _paired_rounds(outcome, usable, store, run_id, rigor, seed,
                                                     lambda m: _measured_again(plan, m, usable, rigor, seed, sampler,
                                                                               trust))
        paired = store.speedups(run_id)  # what was stored, also when a stop came during pairing
        if not outcome.interrupted:
            machine[machine_reference.KEY] = reference.end()
            store.update_machine(run_id, machine)  # the middle and end readings join the stored snapshot
        store.finish_run(run_id, "interrupted" if outcome.interrupted else "complete")
        path, started_at = str(store.path), store.run_info(run_id).started_at
    return RunResults(run_id, path, outcome.measurements, outcome.skips,
                      {d.id: d for d in inventory.devices}, outcome.interrupted, machine,
                      rigor.name, paired, started_at=started_at)


def _paired_rounds(outcome: Outcome, backends: Mapping[str, Backend], store: Store, run_id: str, rigor: Rigor,
                   seed: int, measure_again: Callable[[Measurement], Measurement | None]) -> bool:
    """Every speed-up timed again in interleaved rounds (runner/pairing.py), then each side whose own
    measurement ran slower than its rounds measured once more (runner/own_again.py); True if stopped."""
    from accelbench.runner.own_again import measure_slowed_again
    from accelbench.runner.pairing import pair_speedups

    try:
        paired = pair_speedups(outcome.measurements, backends, store, run_id, rigor, seed=seed)
        measure_slowed_again(outcome.measurements, paired, measure_again,
                             lambda m: store.replace_result(run_id, m))
    except KeyboardInterrupt:
        return True
    return False


def _measured_again(plan: Plan, m: Measurement, backends: Mapping[str, Backend], rigor: Rigor, seed: int,
                    sampler: TelemetrySampler | None, trust: TrustContext) -> Measurement | None:
    item = next((i for i in plan.items if i.spec.key == m.spec.key), None)
    backend = backends.get(m.spec.backend)
    if item is None or backend is None:
        return None
    return measure_again(item, backend, rigor, seed, sampler=sampler, trust=trust)


def run(workloads: list[str] | str | None = None, *, sizes: list[int] | None = None,
        dtypes: list[str] | str | None = None, devices: list[str] | str | None = None,
        backends: list[str] | str | None = None, threads: int | str | Sequence[int] | None = None,
        rigor: str = "quick", quick: bool | None = None, db: str | None = None, seed: int = DEFAULT_SEED,
        tags: dict | None = None, timeout: float | None = deadline.DEFAULT_SPEC_TIMEOUT_S) -> RunResults:
    """Run workloads across devices from Python; returns RunResults (`.to_pandas()` for a DataFrame).

    `threads`: the CPU threads to measure CPU results with: 1, "all", or a list such as [1, 2]
    (default: the CPU baseline on one thread and on all, other frameworks on all). `timeout`:
    seconds each spec may take; one that takes longer is stored as failed and the run goes on
    (None: no limit). Every argument is checked before anything is stored; a message names the
    argument. In a notebook, a line shows the progress of anything over a couple of seconds.

    >>> results = accelbench.run("matmul", sizes=[500], dtypes="float32", devices="cpu")  # doctest: +SKIP
    """
    from accelbench.store.ceilings import measured_inventory

    def listify(v: str | list[str] | None) -> list[str] | None:
        return [v] if isinstance(v, str) else (None if v is None else list(v))
    with python_arguments():
        counts = check_arguments(rigor=rigor, timeout=timeout, threads=threads, sizes=sizes)
        loaded = load_backends(listify(backends))
        host_memory = host_memory_bytes()
        inventory = measured_inventory(db_path=db)
        plan = with_threads(build_plan(
            listify(workloads), sizes=sizes, dtypes=listify(dtypes), devices=listify(devices), backends=loaded,
            quick=(rigor == "quick") if quick is None else quick, host_memory_bytes=host_memory,
            known_devices={d.id for d in inventory.devices},
            repeated=repeated_host_cpus(inventory.devices)), counts)
    selection = {"workloads": listify(workloads), "sizes": sizes, "dtypes": listify(dtypes),
                 "devices": listify(devices), "backends": listify(backends), "threads": counts,
                 "via": "python"}  # `latest` on the command line means the command line's runs
    config = RunConfig(get_rigor(rigor), db=db, seed=seed, selection=selection, tags=tags, inventory=inventory,
                       timeout=timeout)
    return run_with_progress(plan, loaded, config)


def run_with_progress(plan: Plan, backends: Listed, config: RunConfig) -> RunResults:
    """run_plan, with a progress line in a notebook (report/notebook_progress.py)."""
    import dataclasses

    from accelbench.report.notebook_progress import NotebookProgress

    progress = NotebookProgress(len(plan.items), config.rigor.budget_s)
    results = run_plan(plan, backends, dataclasses.replace(config, on_start=progress.on_start,
                                                           on_done=progress.on_done))
    progress.finish(results.interrupted)
    return results


# the command line's names in the messages of the layers below, and the Python arguments they are
_PYTHON_NAMES = (("--device", "devices"), ("--dtype", "dtypes"), ("--sizes", "sizes"), ("--backend", "backends"),
                 ("--timeout", "timeout"), ("--rigor", "rigor"), ("unknown backend", "backends: unknown"),
                 ("unknown workload", "workloads: unknown"), ("unknown rigor", "rigor: unknown"))


@contextmanager
def python_arguments() -> Iterator[None]:
    """A UsageError raised inside names the Python argument (`devices`), not the CLI flag (`--device`)."""
    try:
        yield
    except UsageError as exc:
        text = str(exc)
        for flag, argument in _PYTHON_NAMES:
            text = text.replace(flag, argument)
        raise UsageError(text, refused_devices=exc.refused_devices) from None


def check_arguments(*, rigor: Rigor | str, timeout, threads, sizes=None) -> tuple[int, ...] | None:
    """Refuse a bad argument before a run is started (nothing stored); returns the thread counts."""
    get_rigor(rigor)
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0):
        raise UsageError(f"timeout: {timeout!r}; accepted: seconds each spec may take (a number above 0), "
                         "or None for no limit")
    if sizes is not None and (isinstance(sizes, (str, int)) or not all(
            isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= MAX_SIZE for n in sizes)):
        raise UsageError(f"sizes: {sizes!r}; accepted: a list of whole sizes from 1 to 2**50, e.g. [1000, 2000]")
    return thread_counts(threads)


def thread_counts(threads: int | str | Sequence[int] | None) -> tuple[int, ...] | None:
    """threads= as counts: 1 -> (1,), "all" -> (usable CPUs,), [1, 2] -> (1, 2); None -> None (the default)."""
    if threads is None:
        return None
    usable = usable_cpus()
    values = list(threads) if isinstance(threads, (list, tuple, range)) else [threads]
    counts = [usable if v == "all" else v for v in values]
    whole = [n for n in counts if isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= usable]
    if not counts or len(whole) != len(counts):
        raise UsageError(f"threads: {threads!r}; accepted: whole numbers from 1 to {usable} (the CPUs this process "
                         "may use), 'all', or a list of them, e.g. [1, 'all']")
    return tuple(sorted(set(whole)))


def with_threads(plan: Plan, counts: tuple[int, ...] | None) -> Plan:
    """The plan with each CPU spec measured on each of `counts` threads (None: the plan as it is)."""
    if counts is None:
        return plan
    items, seen = [], set()
    for item in plan.items:
        if item.threads is None:  # a device accelbench sets no threads for
            items.append(item)
            continue
        spec, params = item.spec, tuple((k, v) for k, v in item.spec.params if k != "threads")
        if (spec.workload, spec.backend, spec.device, params) in seen:
            continue
        seen.add((spec.workload, spec.backend, spec.device, params))
        items += [PlanItem(Spec.make(spec.workload, spec.backend, spec.device, **dict(params), threads=n), n)
                  for n in counts]
    return Plan(items, plan.skips)


def host_memory_bytes() -> int | None:
    """This machine's physical memory in bytes (None where the system does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None
