"""The Python API: `accelbench.run`, `accelbench.bench`, the `accelbench.workload` decorator and
`accelbench.Compare` (several results in one table)."""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Callable, Sequence

from accelbench.errors import UsageError
from accelbench.runner.deadline import DEFAULT_SPEC_TIMEOUT_S
from accelbench.runner.run_config import RunConfig
from accelbench.session import (RunResults, check_arguments, load_backends, python_arguments, run,
                                run_with_progress, with_threads)
from accelbench.timing.rigor import get_rigor
from accelbench.workloads.custom import FunctionWorkload
from accelbench.workloads.registry import register_workload, unregister_workload

__all__ = ["run", "bench", "workload", "RunResults", "Compare"]


def bench(fn: Callable, inputs: Sequence, *, devices: Sequence[str] | str | None = None,
          backends: Sequence[str] | str | None = None, threads: int | str | Sequence[int] | None = None,
          dtypes: Sequence[str] | str | None = None, reference: Callable | None = None,
          rel_tolerance: float | None = None, flops: float = 0.0, bytes_moved: float | None = None,
          name: str | None = None, rigor: str = "quick", db: str | None = None,
          timeout: float | None = DEFAULT_SPEC_TIMEOUT_S) -> RunResults:
    """Benchmark `fn(*inputs)` as written, stored like any run.

    It runs on its inputs' own array type and device (numpy arrays: numpy on the CPU; torch tensors:
    torch on theirs); other backends only where `backends=` names them, other devices only where
    `devices=` does (a device the inputs' framework cannot reach is tried with the backends that
    can). `threads`: CPU threads, as for `run` (default: one and all for numpy). An exception in
    `fn` (or `reference`) on a backend asked for is raised here, as `%timeit` does, with a note
    saying where; one on a backend not asked for is listed in the results' failures.

    The outputs of the timed calls are checked against `reference` (run by numpy in float64 on the
    host); without one the results are "unverified". The inputs' own float dtype is measured
    unless `dtypes` asks for others. A rate (FLOP/s, B/s) comes only from the work declared:
    `flops=` and `bytes_moved=` per call; without them there is a time and no rate.

    >>> import numpy as np, accelbench
    >>> a = np.random.rand(500, 500)
    >>> r = accelbench.bench(lambda x, y: x @ y, [a, a], flops=2 * 500**3)  # doctest: +SKIP
    >>> r.to_pandas()[["series", "median_s", "rate"]]  # doctest: +SKIP

    `timeout`: seconds each device's measurement may take; one that hangs is stored as failed
    ("timed out after N s") and the next device still runs (None: no limit).
    """
    from accelbench.runner.plan import build_plan
    from accelbench.store.ceilings import measured_inventory

    with python_arguments():
        counts = check_arguments(rigor=rigor, timeout=timeout, threads=threads)
        custom = FunctionWorkload(fn, inputs, name=name, reference=reference, rel_tolerance=rel_tolerance,
                                  flops=flops, bytes_moved=bytes_moved, dtypes=_listify(dtypes))
        asked = _listify(backends) or [custom.framework]
        loaded = load_backends(asked)
        _check_available(loaded, explicit=backends is not None)
        wanted = _listify(devices) or [_home_device(custom, loaded)]
        pairs = _pairs(loaded, wanted, fill=devices is not None)  # may add backends to `loaded`
        inventory = measured_inventory(db_path=db)
        try:
            register_workload(custom)  # for this run only: a user's function never joins the workload list
        except UsageError as exc:
            raise UsageError(f"name: {exc}") from None
    try:
        with python_arguments():
            plan = with_threads(build_plan([custom.name], dtypes=_listify(dtypes), devices=wanted, backends=loaded,
                                           known_devices={d.id for d in inventory.devices}), counts)
        plan.items = [i for i in plan.items if (i.spec.backend, i.spec.device) in pairs]
        plan.skips = [s for s in plan.skips if (s.spec.backend, s.spec.device) in pairs]
        results = run_with_progress(plan, loaded, RunConfig(
            get_rigor(rigor), db=db, inventory=inventory, timeout=timeout,
            selection={"workloads": [custom.name], "custom": True, "via": "python"}))
    finally:
        unregister_workload(custom.name)
    _raise_own_error(custom, asked, results)
    return results


def _listify(v: str | Sequence[str] | None) -> list[str] | None:
    return [v] if isinstance(v, str) else (list(v) if v is not None else None)


def _check_available(loaded: dict, explicit: bool) -> None:
    for name, backend in loaded.items():
        availability = backend.availability()
        if not availability.ok:
            argument = "backends" if explicit else "inputs"
            raise UsageError(f"{argument}: {name} cannot run here: {availability.reason}")


def _home_device(custom: FunctionWorkload, loaded: dict) -> str:
    """Where the inputs live (the CPU for numpy arrays, a tensor's own device for torch)."""
    backend = loaded.get(custom.framework)
    if backend is None or not custom.given:
        return "cpu"
    try:
        return backend.location(custom.given[0])
    except Exception:  # noqa: BLE001 - an array the backend cannot place runs where the backend's first device is
        return (backend.device_ids() or ["cpu"])[0]


def _pairs(loaded: dict, wanted: list[str], fill: bool) -> set[tuple[str, str]]:
    """(backend, device) to measure: the backends asked for on each wanted device they reach; with
    `devices=` given (`fill`), a device none of them reaches is tried with every backend that does
    (added to `loaded`)."""
    pairs = {(name, d) for name, backend in loaded.items() for d in backend.device_ids() if d in wanted}
    missing = [d for d in wanted if not any(d == device for _, device in pairs)]
    if not (fill and missing):
        return pairs
    for name, backend in load_backends().items():
        reached = [d for d in backend.device_ids() if d in missing] if name not in loaded and backend.availability().ok else []
        if reached:
            loaded[name] = backend
            pairs |= {(name, d) for d in reached}
    return pairs


def _raise_own_error(custom: FunctionWorkload, asked: list[str], results: RunResults) -> None:
    """Raise what the user's function (or reference) raised on a backend they asked for, as %timeit does."""
    for (backend, device), (role, error) in custom.raised.items():
        if backend not in asked:
            continue  # a backend not asked for: its failure is listed in results.skips
        where = f"{backend}@{device}"
        note = (f"accelbench.bench: raised by your {role} {custom.name!r} on {where}; the run is stored as "
                f"{results.run_id} (accelbench.load_run({results.run_id!r}, db={results.db_path!r}))")
        error = _from_user_frame(error, custom.reference if role == "reference" else custom.fn)
        if hasattr(error, "add_note"):  # Python 3.11+: the user's own exception, with accelbench's context
            error.add_note(note)
            raise error
        raise RuntimeError(f"{note}: {type(error).__name__}: {error}") from error


def _from_user_frame(error: Exception, fn: Any) -> Exception:
    """The traceback from the user's function on (accelbench's timing machinery left out)."""
    code, tb = getattr(fn, "__code__", None), error.__traceback__
    while tb is not None and tb.tb_frame.f_code is not code:
        tb = tb.tb_next
    return error.with_traceback(tb) if tb is not None else error


class Compare:
    """Several results in one table, as torch.utils.benchmark.Compare: a line per function (and
    dtype), a column per backend@device (threads), the median time ± its 95% interval in each cell.

    >>> accelbench.Compare([bench_numpy, bench_torch])  # doctest: +SKIP
    """

    def __init__(self, results: Iterable[RunResults] | RunResults, *more: RunResults):
        self.results = [results, *more] if isinstance(results, RunResults) else [*results, *more]
        if not all(isinstance(r, RunResults) for r in self.results):
            raise UsageError("results: RunResults, as accelbench.run and accelbench.bench return them")

    def _parts(self) -> tuple[list, list]:
        rows = [row for r in self.results for row in r.rows]
        return rows, [s for r in self.results for s in r.skips]

    def __repr__(self) -> str:
        from accelbench.report.bench_table import table_text

        return table_text(*self._parts())

    def _repr_html_(self) -> str:
        from accelbench.report.bench_table import table_html

        return table_html(*self._parts())

    def print(self) -> None:
        print(repr(self))

    def to_pandas(self):
        import pandas as pd

        return pd.concat([r.to_pandas() for r in self.results], ignore_index=True)


def workload(*, flops: float = 0.0, bytes_moved: float | None = None, reference: Callable | None = None,
             rel_tolerance: float | None = None, name: str | None = None):
    """Decorator: `@accelbench.workload(flops=...)` gives the function a `.bench(inputs, devices=...)`."""
    def decorate(fn: Callable) -> Callable:
        def bench_on(inputs: Sequence, **options) -> RunResults:
            return bench(fn, inputs, flops=flops, bytes_moved=bytes_moved, reference=reference,
                         rel_tolerance=rel_tolerance, name=name or fn.__name__, **options)
        setattr(fn, "bench", bench_on)  # a function's attributes are open; Callable declares none
        return fn
    return decorate
