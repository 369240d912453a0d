"""What the statistics workloads share: dtype checks, the namespace / OpenCL-kernel split, metrics.

Each workload is written once against the backend's array namespace (`prepare_arrays`), and, where
a kernel exists, once more as OpenCL for the kernel-only pyopencl backend (`prepare_kernels`).
`verify` computes the result again from the recorded seed, compares it with the exact value or the
float64 reference, and keeps the figures so `metrics` reports what the check saw: the error of this
dtype next to the speed, the trade-off seed 000 asks about ("single precision, if it does not
affect the result substantially").
"""
from __future__ import annotations

from typing import Any, Callable

from accelbench.errors import Unsupported
from accelbench.results import Check
from accelbench.workloads.base import Prepared, Workload
from accelbench.workloads.stats.arrays import ArrayOps, require_dtype

ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}
QUICK_DTYPES = ["float64", "float32"]  # what --quick sweeps: lower precisions are asked for by name


class StatsWorkload(Workload):
    dtypes = ("float64", "float32", "bfloat16")
    #: what a run without --dtype and without --quick sweeps (a subset of dtypes)
    default_dtypes: tuple[str, ...] = ("float64", "float32")
    #: what one unit of `items_per_call` is ("draws", "points" ...): the report shows <unit>/s
    item_unit = "items"
    #: True where stats/opencl_kernels.py has this workload's kernel (for the pyopencl backend)
    has_opencl_kernel = False

    def prepare(self, backend, device, params, seed):
        require_dtype(backend, device, params["dtype"])
        if backend.namespace(device) is None:
            if not self.has_opencl_kernel or backend.name != "pyopencl":
                raise Unsupported(f"{self.name} has no kernel for {backend.name} (no array namespace there)")
            from accelbench.workloads.stats.opencl_runner import KernelRunner

            return self.prepare_kernels(KernelRunner(backend, device, params["dtype"]), params, seed)
        return self.prepare_arrays(ArrayOps(backend, device), params, seed)

    def prepare_arrays(self, ops: ArrayOps, params: dict, seed: int) -> Prepared:
        raise NotImplementedError

    def prepare_kernels(self, runner: Any, params: dict, seed: int) -> Prepared:
        raise Unsupported(f"{self.name} has no OpenCL kernel")

    def items_per_call(self, params: dict) -> int:
        raise NotImplementedError


def checked(compute: Callable[[], Any], evaluate: Callable[[], tuple[Check, dict]], base_metrics: dict,
            **prepared: Any) -> Prepared:
    """A Prepared whose verify runs `evaluate` (-> Check, figures) and whose metrics add the figures.

    `base_metrics` (seed, sizes, items_per_call ...) are reported even if verification never ran.
    """
    seen: dict = {}

    def verify() -> Check:
        check, figures = evaluate()
        seen.clear()
        seen.update(figures)
        return check

    def metrics() -> dict:
        return {**base_metrics, **seen}

    return Prepared(compute=compute, verify=verify, metrics=metrics, **prepared)


def base_metrics(workload: StatsWorkload, params: dict, seed: int, generator: str) -> dict:
    return {"items_per_call": workload.items_per_call(params), "item_unit": workload.item_unit,
            "seed": int(seed), "generator": generator}
