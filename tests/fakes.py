"""Test doubles: virtual time and a backend whose costs and behaviour are set by the test.

FakeClock only moves when fake work moves it, so tests never depend on the machine's speed.
FakeBackend charges a known cost per kernel and per sync; in asynchronous mode kernels only
queue work on a virtual device, and the clock catches up with the device when it is
synchronised (or data is copied back), as with CUDA. `wrong_by` makes every op's result wrong
by that relative amount, for the verification layer.

Import from a test with `from fakes import FakeBackend, FakeClock` (tests/ on sys.path).
"""
from __future__ import annotations

import math
import random
from typing import Any, Callable

import numpy as np

from accelbench.backends.base import Availability, Backend
from accelbench.backends.framework_ops import ArrayNamespaceOps

KernelCost = float | Callable[[int], float]  # seconds, or seconds as a function of the call index


class FakeClock:
    """Virtual seconds. `advance` adds fake work (with optional seeded jitter); `now` reads.

    jitter: relative standard deviation of each advance (Gaussian, clipped at zero).
    read_cost_s: virtual time each `now()` costs. resolution_s: reads are floored to this step.
    """

    def __init__(self, start_s: float = 0.0, *, jitter: float = 0.0, seed: int = 0,
                 read_cost_s: float = 0.0, resolution_s: float = 0.0) -> None:
        self.time_s = float(start_s)  # exact virtual time; tests may read it without cost
        self.jitter = jitter
        self.read_cost_s = read_cost_s
        self.resolution_s = resolution_s
        self.reads = 0
        self._rng = random.Random(seed)

    def now(self) -> float:
        self.reads += 1
        self.time_s += self.read_cost_s
        if self.resolution_s > 0:
            return math.floor(self.time_s / self.resolution_s) * self.resolution_s
        return self.time_s

    def jittered(self, duration_s: float) -> float:
        if self.jitter <= 0 or duration_s <= 0:
            return duration_s
        return duration_s * max(0.0, 1.0 + self.jitter * self._rng.gauss(0.0, 1.0))

    def advance(self, duration_s: float) -> None:
        self.time_s += self.jittered(duration_s)

    sleep = advance


class FakeBackend(ArrayNamespaceOps):
    """A Backend with known costs, on numpy arrays, on one fake device.

    kernel_s: seconds per kernel call, or a function of the call index (warm-up, bimodal, ...).
    compile_s: extra seconds on the first kernel only (compilation, autotuning).
    sync_s: seconds each synchronize() costs. transfer_s_per_byte: cost of from_host/to_host.
    asynchronous: kernels queue work; time passes on the clock only at synchronize()/to_host.
    wrong_by: every op's result is multiplied by (1 + wrong_by).
    location_seen: what location() reports (default: the fake device), to fake a fallback.
    """

    name = "fake"

    def __init__(self, clock: FakeClock | None = None, *, kernel_s: KernelCost = 1e-3,
                 compile_s: float = 0.0, sync_s: float = 0.0, transfer_s_per_byte: float = 0.0,
                 asynchronous: bool = False, wrong_by: float = 0.0, device: str = "fake:0",
                 location_seen: str | None = None) -> None:
        self.clock = clock if clock is not None else FakeClock()
        self.kernel_s, self.compile_s, self.sync_s = kernel_s, compile_s, sync_s
        self.transfer_s_per_byte = transfer_s_per_byte
        self.asynchronous = asynchronous
        self.wrong_by = wrong_by
        self.device = device
        self.location_seen = location_seen
        self.calls = 0
        self.syncs = 0
        self._device_free_at_s = 0.0  # when the virtual device finishes its queue

    # -- the timed work --------------------------------------------------------------------
    def kernel(self) -> None:
        """One kernel of the configured cost: run now, or queued if asynchronous."""
        cost_s = self.kernel_s(self.calls) if callable(self.kernel_s) else self.kernel_s
        if self.calls == 0:
            cost_s += self.compile_s
        self.calls += 1
        cost_s = self.clock.jittered(cost_s)
        if self.asynchronous:
            self._device_free_at_s = max(self._device_free_at_s, self.clock.time_s) + cost_s
        else:
            self.clock.time_s += cost_s

    @property
    def pending_s(self) -> float:
        """Queued device work the clock has not seen yet (always 0 when synchronous)."""
        return max(0.0, self._device_free_at_s - self.clock.time_s)

    def synchronize(self, device: str | None = None) -> None:
        self.syncs += 1
        self._drain()
        self.clock.advance(self.sync_s)

    def _drain(self) -> None:
        self.clock.time_s = max(self.clock.time_s, self._device_free_at_s)

    # -- discovery -------------------------------------------------------------------------
    def availability(self) -> Availability:
        return Availability(True)

    def device_ids(self) -> list[str]:
        return [self.device]

    # -- data movement ---------------------------------------------------------------------
    def from_host(self, array: np.ndarray, device: str, pinned: bool = False) -> Any:
        self.clock.advance(self.transfer_s_per_byte * array.nbytes)
        return np.array(array, copy=True)

    def to_host(self, array: Any) -> np.ndarray:
        self._drain()  # copying back waits for the producing kernels, as on a real device
        self.clock.advance(self.transfer_s_per_byte * array.nbytes)
        return np.array(array, copy=True)

    def location(self, array: Any) -> str:
        return self.location_seen or self.device

    def namespace(self, device: str) -> Any:
        return np

    def random(self, shape: tuple[int, ...], dtype: str, device: str, seed: int) -> Any:
        return np.random.default_rng(seed).uniform(-1.0, 1.0, size=shape).astype(dtype)

    def empty(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        return np.empty(shape, dtype=dtype)

    def astype(self, array: Any, dtype: str) -> Any:
        return np.asarray(array).astype(dtype)

    # -- ops: numpy results, the configured cost, optionally wrong -------------------------------
    def _xp(self, array: Any) -> Any:
        return np

    def _done(self, result: Any) -> Any:
        self.kernel()
        if self.wrong_by and isinstance(result, np.ndarray):
            result *= 1.0 + self.wrong_by  # in place, so an out= buffer is wrong too
        elif self.wrong_by:
            result = result * (1.0 + self.wrong_by)
        return result

    def matmul(self, a, b, out=None):
        return self._done(super().matmul(a, b, out))

    def copy(self, a, out):
        return self._done(super().copy(a, out))

    def scale(self, a, scalar, out):
        return self._done(super().scale(a, scalar, out))

    def add(self, a, b, out):
        return self._done(super().add(a, b, out))

    def triad(self, a, b, scalar, out):
        return self._done(super().triad(a, b, scalar, out))

    def total(self, a):
        return self._done(super().total(a))

    def elementwise(self, a, out):
        return self._done(super().elementwise(a, out))


class HostArrayBackend(Backend):
    """The least a backend must implement (Backend's abstract methods), on host numpy arrays: for
    tests of discovery and reach that need a backend the registry accepts."""

    name = "host"

    def availability(self) -> Availability:
        return Availability(True)

    def device_ids(self) -> list[str]:
        return ["cpu"]

    def from_host(self, array: np.ndarray, device: str, pinned: bool = False) -> Any:
        return array.copy()

    def to_host(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    def location(self, array: Any) -> str:
        return "cpu"

    def random(self, shape: tuple[int, ...], dtype: str, device: str, seed: int) -> Any:
        return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)

    def empty(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        return np.empty(shape, dtype=dtype)

    def astype(self, array: Any, dtype: str) -> Any:
        return array.astype(dtype)
