"""What the statistics workloads share: dtype checks, the namespace / OpenCL-kernel split, metrics.

Each workload is written once against the backend's array namespace (`prepare_arrays`), and, where
a kernel exists, once more as OpenCL for the kernel-only pyopencl backend (`prepare_kernels`).
The check judges what the timed calls returned (runner/audit.py): workloads that draw new random
numbers each call are judged on the last timed call's estimate (`checked`); deterministic ones rotate
input sets through the timed calls (`JudgedRotation`, workloads/rotation.py), so caching by input or
a stale output cannot pass. Each judgement also keeps its figures, so `metrics` reports what the
check saw: the error of this dtype next to the speed, the trade-off seed 000 asks about ("single
precision, if it does not affect the result substantially").
"""
from __future__ import annotations

from typing import Any, Callable

from accelbench.errors import Unsupported
from accelbench.results import Check
from accelbench.workloads.base import Prepared, Workload
from accelbench.workloads.rotation import Rotation, Variant
from accelbench.workloads.stats.arrays import ArrayOps, array_ops, require_dtype

QUICK_DTYPES = ["float64", "float32"]  # what --quick sweeps: lower precisions are asked for by name


class StatsWorkload(Workload):
    role = "model"  # a whole model or application, read on its own figures
    dtypes: tuple[str, ...] = ("float64", "float32", "bfloat16")
    #: what a run without --dtype and without --quick sweeps (a subset of dtypes)
    default_dtypes: tuple[str, ...] = ("float64", "float32")
    #: what one unit of `items_per_call` is ("draws", "points" ...): the report shows <unit>/s
    item_unit = "items"
    #: True where stats/opencl_kernels.py has this workload's kernel (for a backend whose
    #: kernel_language is "opencl-c": pyopencl)
    has_opencl_kernel = False

    def prepare(self, backend, device, params, seed):
        require_dtype(backend, device, params["dtype"])
        if backend.namespace(device) is None:
            if not self.has_opencl_kernel or backend.kernel_language != "opencl-c":
                raise Unsupported(f"{self.name} has no kernel for {backend.name} (no array namespace there)")
            from accelbench.workloads.stats.opencl_runner import KernelRunner

            return self.prepare_kernels(KernelRunner(backend, device, params["dtype"]), params, seed)
        return self.prepare_arrays(array_ops(backend, device), params, seed)

    def prepare_arrays(self, ops: ArrayOps, params: dict, seed: int) -> Prepared:
        raise NotImplementedError

    def prepare_kernels(self, runner: Any, params: dict, seed: int) -> Prepared:
        raise Unsupported(f"{self.name} has no OpenCL kernel")

    def items_per_call(self, params: dict) -> int:
        raise NotImplementedError

    def sequential(self, params: dict) -> bool:
        """True where the problem is one chain of dependent steps, which no thread count speeds up: its
        CPU result on N threads is flagged as running on one and is no all-cores baseline. Every other
        statistics problem runs its chunks on all the CPU threads (stats/arrays.py map_chunks)."""
        return False


Judgement = Callable[..., "tuple[Check, dict]"]


def checked(compute: Callable[[], Any], judge_output: Callable[[Any], tuple[Check, dict]], base_metrics: dict,
            *, figures: Callable[[], dict] | None = None, **prepared: Any) -> Prepared:
    """A Prepared whose check judges what a timed call returned (`judge_output(output)` -> Check, figures).

    `figures`, where given, is an untimed extra computation whose figures join the metrics (the same
    draws in float64, say); it never decides the check. `base_metrics` (seed, sizes, items_per_call
    ...) are reported even if the check never ran.
    """
    seen: dict = {}

    def check_output(output: Any) -> Check:
        check, found = judge_output(output)
        seen.clear()
        seen.update(found)
        if figures is not None and check.passed:
            seen.update(figures())
        return check

    return Prepared(compute=compute, check_output=check_output, metrics=lambda: {**base_metrics, **seen},
                    **prepared)


class JudgedRotation(Rotation):
    """A Rotation whose judge(output, variant) also returns figures; the metrics show those of the
    first input set judged (variant 0: the workload as documented, refreshed sets differ in values)."""

    def __init__(self, make: Callable[[int], Variant], judge: Judgement, base_metrics: dict) -> None:
        self.judge_with_figures, self.base_metrics = judge, base_metrics
        self.figures: dict[int, dict] = {}
        super().__init__(make, self._judged)

    def _judged(self, output: Any, variant: Variant) -> Check:
        check, found = self.judge_with_figures(output, variant)
        self.figures[variant.key] = found
        return check

    def metrics(self) -> dict:
        return {**self.base_metrics, **(self.figures[min(self.figures)] if self.figures else {})}

    def prepared(self, backend, **fields: Any) -> Prepared:
        return super().prepared(backend, metrics=self.metrics, **fields)


def base_metrics(workload: StatsWorkload, params: dict, seed: int, generator: str) -> dict:
    return {"items_per_call": workload.items_per_call(params), "item_unit": workload.item_unit,
            "seed": int(seed), "generator": generator}
