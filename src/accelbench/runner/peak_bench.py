"""A real device for the peak finder: square products through an accelbench backend, checked and timed.

The check is Freivalds': C·x against A·(B·x) in float64 on the host, for a random x. It costs
O(n²) where a full reference product costs O(n³) (minutes on the host for the orders a GPU needs),
and a wrong C escapes it only by chance (the error must be orthogonal to a random x). The inputs
are the values the device holds (rounded to the dtype), so the reference is of the same product.
"""
from __future__ import annotations

import time
from typing import Any, Callable

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Check
from accelbench.runner.peak_finder import Burst
from accelbench.workloads.verify import as_computed, host_inputs, make_check, relative_norm_error, tolerance

BATCH_S = 0.1   # calls between synchronisations: short against a burst, long against a launch
SETTLED_BATCH_S = BATCH_S / 4   # batches this long count as the burst's samples (not the ramp of 1, 2, 4 calls)

# (clock MHz, power W) now, either None where the device does not say
Reader = Callable[[], tuple[float | None, float | None]]


class BackendBench:
    """Products of `dtype` on `device` through `backend` (any accelbench backend with matmul)."""

    def __init__(self, backend: Any, device: str, dtype: str, seed: int = 0, reader: Reader | None = None):
        if dtype not in backend.dtypes(device):
            raise Unsupported(f"{backend.name} has no {dtype} on {device}")
        self.backend, self.device, self.dtype, self.seed = backend, device, dtype, seed
        self.label = f"{backend.name}@{device} {dtype}"
        self._reader = reader or (lambda: (None, None))
        self._held: dict[int, dict[str, Any]] = {}

    def prepare(self, n: int) -> None:
        if n in self._held:
            return
        host_a = host_inputs((n, n), self.seed + n, self.dtype)
        host_b = host_inputs((n, n), self.seed + n + 1, self.dtype)
        a, b = self._placed(host_a), self._placed(host_b)
        self._held[n] = {"a": a, "b": b, "out": self.backend.empty((n, n), self.dtype, self.device),
                         "host_a": as_computed(host_a, self.dtype), "host_b": as_computed(host_b, self.dtype)}

    def _placed(self, host: np.ndarray) -> Any:
        array = self.backend.from_host(host, self.device)
        return self.backend.astype(array, self.dtype) if self.dtype == "bfloat16" else array

    def _call(self, n: int) -> Any:
        held = self._held[n]
        return self.backend.matmul(held["a"], held["b"], out=held["out"])

    def check(self, n: int) -> Check:
        held = self._held[n]
        self.backend.fill_nan(held["out"])  # a product that was never written cannot pass on stale values
        output = self._call(n)
        self.backend.synchronize(self.device)
        x = np.random.default_rng(self.seed + 7 * n).uniform(-1.0, 1.0, size=n)
        expected = held["host_a"] @ (held["host_b"] @ x)
        found = np.asarray(self.backend.to_host(output), dtype=np.float64) @ x
        error = relative_norm_error(found, expected)
        return make_check(error, tolerance(self.dtype, terms=n), self.backend.location(output), self.device,
                          f"C·x = A·(B·x) (Freivalds), n={n}")

    def burst(self, n: int, seconds: float) -> Burst:
        self._call(n)  # the order's first call (library heuristics, allocation) stays out of the burst
        self.backend.synchronize(self.device)
        batch = 1  # grows to BATCH_S worth of calls: one timed call is too noisy to size a batch on
        calls, started = 0, time.perf_counter()
        batches: list[tuple[float, int]] = []  # (seconds, calls) of each batch
        while True:
            batch_started = time.perf_counter()
            for _ in range(batch):
                self._call(n)
            self.backend.synchronize(self.device)
            calls += batch
            now = time.perf_counter()
            batches.append((now - batch_started, batch))
            elapsed = now - started
            if elapsed >= seconds:
                break
            # resize to the speed seen now: a shared or throttling device must not overrun the burst
            batch = max(1, min(batch * 2, int(BATCH_S * batch / max(now - batch_started, 1e-6))))
        clock_mhz, power_w = self._reader()  # at the burst's end, while the chip is still under load
        return Burst(calls, elapsed, clock_mhz, power_w, per_call_of_batches(batches))

    def release(self, n: int) -> None:
        # one order at a time on the device: the largest ones fill a good part of its memory
        for other in [k for k in self._held if k != n]:
            del self._held[other]


def per_call_of_batches(batches: list[tuple[float, int]]) -> tuple[float, ...]:
    """Each batch's seconds per call: the settled batches (at least SETTLED_BATCH_S long), or every
    batch where fewer than three settled (a burst of a few long calls)."""
    settled = [(s, c) for s, c in batches if s >= SETTLED_BATCH_S]
    return tuple(s / c for s, c in (settled if len(settled) >= 3 else batches) if c > 0)


def cpu_reader() -> Reader:
    """The CPU's running clock right after a burst (devices/cpu_clock.py's multiply chain; no power)."""
    from accelbench.devices.cpu_clock import estimate_running_clock

    def read() -> tuple[float | None, float | None]:
        estimate = estimate_running_clock(iterations=100_000, repeats=3)
        return (estimate.ghz * 1000 if estimate.ghz else None), None
    return read


def nvml_reader(nvml_index: int) -> Reader | None:
    """The SM clock and board power NVML reports now; None where NVML does not load."""
    try:
        from accelbench.telemetry.nvml_calls import load
        nvml = load()
        nvml.init()
    except Exception:  # noqa: BLE001 - no NVML: the finder runs without clocks, and says so
        return None

    def read() -> tuple[float | None, float | None]:
        try:
            return float(nvml.clock_mhz(nvml_index, "sm")), nvml.power_mw(nvml_index) / 1000
        except Exception:  # noqa: BLE001 - a reading NVML refuses is absent, not fatal
            return None, None
    return read
