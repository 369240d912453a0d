"""Launching the statistics kernels (stats/opencl_kernels.py) on one device of a kernel backend.

The backend builds, allocates and launches (`build_kernel`, `buffer`, `launch`: the pyopencl
backend) on its own in-order queue, so the harness's `backend.synchronize(device)` waits for these
kernels too. Results stay on the device as the backend's arrays when the timed call asks
(keep_on_device=True); otherwise they come back as float64 numpy values for the check.

`slot` separates the buffers of the input sets the timed calls rotate through (workloads/rotation.py):
each slot has its own inputs and outputs, so one set's call never overwrites another's output.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from accelbench.errors import Unsupported
from accelbench.workloads.stats.opencl_kernels import PREAMBLES, kernel_source

GROUPS_PER_UNIT = 8       # reduction groups per compute unit: enough to hide latency on a GPU
KDE_TILE = 64             # points staged per local-memory tile in the KDE kernel
OUTPUT_RING = 64          # Monte Carlo outputs taken in turn: each call of a block judged on its own


class KernelRunner:
    generator = "Philox-4x32-10 in-kernel (counter-based)"

    def __init__(self, backend: Any, device: str, dtype: str) -> None:
        if dtype not in PREAMBLES:
            raise Unsupported(f"the statistics kernels compute in {', '.join(PREAMBLES)}, not {dtype}")
        self.backend, self.device, self.dtype = backend, device, dtype
        probe = backend.empty((1,), "float32", device)
        self.group = backend.work_group_size(device)  # work-items per reduction group: a power of two
        self.max_groups = max(1, GROUPS_PER_UNIT * backend.compute_units(device))
        self.has_float64 = "float64" in backend.dtypes(device)
        self.arrays: dict[str, Any] = {}
        self._scratch: dict[tuple, Any] = {}
        self.slot = 0
        self._turn = 0  # which of OUTPUT_RING outputs the next reduction writes
        self.last: Any = probe

    # -- plumbing ------------------------------------------------------------------------------
    def _np(self, dtype: str) -> type:
        return np.float64 if dtype == "float64" else np.float32

    def _kernel(self, dtype: str, family: str, name: str, **defines: int) -> Any:
        if dtype not in PREAMBLES or (dtype == "float64" and not self.has_float64):
            raise Unsupported(f"{self.device} has no {dtype} for the statistics kernels")
        defines = {"RL": self.group, "COLS": 1, **defines}
        return self.backend.build_kernel(self.device, kernel_source(dtype, family, defines), name)

    def _launch(self, kernel: Any, global_size: int, local_size: int | None, *args: Any) -> None:
        self.backend.launch(self.device, kernel, (global_size,), None if local_size is None else (local_size,), *args)

    def _array(self, shape: tuple[int, ...], dtype: Any, turn: int = 0) -> Any:
        """A device array kept per (shape, dtype, turn): timed calls do not allocate (the queue is in
        order, so a call never overwrites what an earlier one is still computing)."""
        key = (self.slot, tuple(shape), np.dtype(dtype).name, turn)
        found = self._scratch.get(key)
        if found is None:
            found = self._scratch[key] = self.backend.buffer(shape, dtype, self.device)
        return found

    def _groups(self, work_items: int) -> int:
        return max(1, min(self.max_groups, -(-work_items // self.group)))

    def _finish(self, result: Any, keep_on_device: bool) -> Any:
        self.last = result
        if keep_on_device:
            return result
        return np.asarray(self.backend.to_host(result), dtype=np.float64)

    def _reduced(self, dtype: str, partials: Any, groups: int, columns: int, scale: float, ring: int = 1) -> Any:
        """The partials' column sums, into one of `ring` output arrays taken in turn (a few bytes
        each): calls whose outputs are all read after their block each keep their own."""
        self._turn = (self._turn + 1) % ring
        out = self._array((columns,), self._np(dtype), turn=self._turn if ring > 1 else 0)
        kernel = self._kernel(dtype, "reduce", "reduce_columns", COLS=columns)
        self._launch(kernel, self.group, self.group, np.uint64(groups), self._np(dtype)(scale),
                     partials, out)
        return out

    # -- what the workloads call -------------------------------------------------------------------
    def location(self) -> str:
        return self.backend.location(self.last)

    def fetch_last(self) -> np.ndarray:
        return self.backend.to_host(self.last)

    def _named(self, name: str) -> str:
        return name if self.slot == 0 else f"{name}#{self.slot}"

    def upload(self, name: str, host: np.ndarray) -> Any:
        self.arrays[self._named(name)] = self.backend.from_host(
            np.ascontiguousarray(host, dtype=self._np(self.dtype)), self.device)
        return self.arrays[self._named(name)]

    def release(self) -> None:
        self.arrays.clear()
        self._scratch.clear()

    def release_slot(self, slot: int) -> None:
        """Free one slot's inputs and outputs (an input set that was replaced)."""
        suffix = f"#{slot}"
        for name in [n for n in self.arrays if (n.endswith(suffix) if slot else "#" not in n)]:
            del self.arrays[name]
        for key in [k for k in self._scratch if k[0] == slot]:
            del self._scratch[key]

    def montecarlo_sums(self, n: int, seed: int, dtype: str, option: dict, keep_on_device: bool = False):
        """[Σ max(S_T − K, 0), Σ of its squares] over n in-kernel draws."""
        real = self._np(dtype)
        drift = (option["rate"] - option["volatility"] ** 2 / 2) * option["maturity_years"]
        vol = option["volatility"] * option["maturity_years"] ** 0.5
        groups = self._groups(-(-n // 2))
        partials = self._array((2 * groups,), real)
        kernel = self._kernel(dtype, "montecarlo", "call_payoffs")
        self._launch(kernel, groups * self.group, self.group, np.uint64(n), np.uint64(seed % 2**64),
                     real(drift), real(vol), real(option["spot"]), real(option["strike"]), partials)
        return self._finish(self._reduced(dtype, partials, groups, 2, 1.0, OUTPUT_RING), keep_on_device)

    def integrate(self, rule: str, intervals: int, dtype: str, lower: float, upper: float,
                  keep_on_device: bool = False):
        """The rule's value of ∫ φ over [lower, upper] (φ's 1/√(2π) and h applied in the reduction)."""
        real, h = self._np(dtype), (upper - lower) / intervals
        simpson = int(rule == "simpson")
        groups = self._groups(intervals + 1)
        partials = self._array((groups,), real)
        kernel = self._kernel(dtype, "quadrature", "quadrature", SIMPSON=simpson)
        self._launch(kernel, groups * self.group, self.group, np.uint64(intervals), real(lower), real(h),
                     partials)
        scale = h / (2 * np.pi) ** 0.5 / (3.0 if simpson else 1.0)
        return self._finish(self._reduced(dtype, partials, groups, 1, scale), keep_on_device)

    def kernel_means(self, name: str, n: int, dimensions: int, bandwidth2: float, keep_on_device: bool = False):
        real = self._np(self.dtype)
        out = self._array((n,), real)
        kernel = self._kernel(self.dtype, "kde", "kernel_means", TILE=KDE_TILE, D=dimensions)
        padded = -(-n // KDE_TILE) * KDE_TILE
        self._launch(kernel, padded, KDE_TILE, np.int32(n), real(-0.5 / bandwidth2),
                     self.arrays[self._named(name)], out)
        return self._finish(out, keep_on_device)

    def t_test_rejections(self, replicates: int, group_size: int, seed: int, critical: float, effects,
                          keep_on_device: bool = False):
        """Rejections per effect size (cell), as `dtype` counts, of `replicates` t-tests each."""
        real, cells = self._np(self.dtype), len(effects)
        groups = self._groups(replicates)
        partials = self._array((groups * cells,), real)
        if "effects" not in self.arrays:
            self.arrays["effects"] = self.backend.from_host(np.asarray(effects, dtype=real), self.device)
        kernel = self._kernel(self.dtype, "ttest", "t_tests", CELLS=cells)
        self._launch(kernel, groups * self.group, self.group, np.uint64(replicates), np.uint32(group_size),
                     np.uint64(seed % 2**64), real(critical), self.arrays["effects"], partials)
        return self._finish(self._reduced(self.dtype, partials, groups, cells, 1.0), keep_on_device)

    def resample_indices(self, resamples: int, n: int, seed: int) -> np.ndarray:
        """The (resamples, n) index matrix, made on the device and kept there; a host copy returned."""
        indices = self._array((resamples, n), np.uint32)
        kernel = self._kernel(self.dtype, "bootstrap", "resample_indices", STAT=0)
        self._launch(kernel, resamples * n, None, np.uint32(resamples), np.uint32(n), np.uint64(seed % 2**64),
                     indices)
        self.arrays[self._named("indices")] = indices
        return self.backend.to_host(indices).astype(np.int64)

    def bootstrap(self, stat: str, resamples: int, n: int, keep_on_device: bool = False):
        """The statistic ("mean" or "ols") of every resample of the uploaded x and y."""
        out = self._array((resamples,), self._np(self.dtype))
        kernel = self._kernel(self.dtype, "bootstrap", "bootstrap", STAT=0 if stat == "mean" else 2)
        self._launch(kernel, resamples, None, np.uint32(resamples), np.uint32(n), self.arrays[self._named("x")],
                     self.arrays[self._named("y")], self.arrays[self._named("indices")], out)
        return self._finish(out, keep_on_device)

    def metropolis(self, chains: int, steps: int, burn_in: int, batches: int, seed: int, step_sd: float,
                   rho: float, keep_on_device: bool = False):
        """(moment sums (batches, chains, 5), acceptances per chain) of `chains` chains."""
        real = self._np(self.dtype)
        per_batch = (steps - burn_in) // batches
        sums = self._array((batches, chains, 5), real)
        accepted = self._array((chains,), np.uint32)
        kernel = self._kernel(self.dtype, "mcmc", "metropolis")
        self._launch(kernel, chains, None, np.uint32(chains), np.uint32(steps), np.uint32(burn_in),
                     np.uint32(per_batch), np.uint32(batches), np.uint64(seed % 2**64), real(step_sd), real(rho),
                     sums, accepted)
        self.last = sums
        if keep_on_device:
            return sums, accepted
        return self.backend.to_host(sums).astype(np.float64), self.backend.to_host(accepted).astype(np.float64)

