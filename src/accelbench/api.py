"""The Python API: `accelbench.run`, `accelbench.bench` and the `accelbench.workload` decorator."""
from __future__ import annotations

from typing import Callable, Sequence

from accelbench.runner.deadline import DEFAULT_SPEC_TIMEOUT_S
from accelbench.session import RunResults, load_backends, run, run_plan
from accelbench.workloads.custom import FunctionWorkload
from accelbench.workloads.registry import register_workload

__all__ = ["run", "bench", "workload", "RunResults"]


def bench(fn: Callable, inputs: Sequence, *, devices: Sequence[str] | str | None = None,
          backends: Sequence[str] | str | None = None, dtypes: Sequence[str] | str | None = None,
          reference: Callable | None = None, rel_tolerance: float | None = None, flops: float = 0.0,
          bytes_moved: float | None = None, name: str | None = None, rigor: str = "quick",
          db: str | None = None, timeout: float | None = DEFAULT_SPEC_TIMEOUT_S) -> RunResults:
    """Benchmark `fn(*inputs)` on each device, stored like any run.

    The outputs of the timed calls are checked against `reference` (run by numpy in float64 on the
    host); without one the results are "unverified". The inputs' own float dtype is measured
    unless `dtypes` asks for others; byte counts follow the dtype measured.

    >>> import numpy as np, accelbench
    >>> a = np.random.rand(500, 500)
    >>> r = accelbench.bench(lambda x, y: x @ y, [a, a], flops=2 * 500**3, devices="cpu")  # doctest: +SKIP
    >>> r.to_pandas()[["backend", "device", "median_s", "rate"]]  # doctest: +SKIP

    `timeout`: seconds each device's measurement may take; one that hangs is stored as failed
    ("timed out after N s") and the next device still runs (None: no limit).
    """
    from accelbench.store.ceilings import measured_inventory
    from accelbench.runner.plan import build_plan

    def listify(v: str | Sequence[str] | None) -> list[str] | None:
        return [v] if isinstance(v, str) else (list(v) if v is not None else None)
    custom = FunctionWorkload(fn, inputs, name=name, reference=reference, rel_tolerance=rel_tolerance,
                              flops=flops, bytes_moved=bytes_moved, dtypes=listify(dtypes))
    register_workload(custom)
    loaded = load_backends(listify(backends))
    inventory = measured_inventory(db_path=db)
    plan = build_plan([custom.name], dtypes=listify(dtypes), devices=listify(devices), backends=loaded,
                      known_devices={d.id for d in inventory.devices})
    return run_plan(plan, loaded, rigor=rigor, db=db, selection={"workloads": [custom.name], "custom": True, "via": "python"},
                    inventory=inventory, timeout=timeout)


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
