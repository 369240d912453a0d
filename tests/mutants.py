"""Mutations of the honest numpy backend: realistic bugs and cheats, each with a strength.

`Mutant(kind, strength)` behaves as numpy does except for its one mutation; `strength` is the
rate inflation the mutation aims for (skip a fraction 1 - 1/strength of the work, work on every
strength-th call, ...). tests/unit/test_detection_power.py runs every kind over every core
workload and measures the largest inflation that is not found invalid (docs/truth.md).

The asynchronous kinds run their ops on a worker thread, as a GPU runs its queue: `to_host`
always waits for the queue (a read-back is honest); what they get wrong is `synchronize()`, or
which queued work they keep.
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Callable

import numpy as np

from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.workloads.verify import round_to_bfloat16

ASYNC_KINDS = ("drop_overwritten", "sync_stops", "partial_wait")
KINDS = ("skip_fraction", "every_kth", "partial_rewrite", "lower_precision", *ASYNC_KINDS,
         "claim_device", "opaque_arrays", "opaque_partial", "zero_copy_upload")
HONEST_SYNCS = 40  # sync_stops: synchronize() waits this many times, then never again


class Opaque:
    """An array type accelbench does not know: it holds a numpy array it never shows."""

    def __init__(self, inner: np.ndarray) -> None:
        self._inner = inner

    shape = property(lambda self: self._inner.shape)
    dtype = property(lambda self: self._inner.dtype)


def _lower(array: np.ndarray) -> np.ndarray:
    """float64 computed in float32; float32 computed on bfloat16-rounded values."""
    if array.dtype == np.float64:
        return array.astype(np.float32)
    return round_to_bfloat16(array)


def _raw(array: Any) -> Any:
    return array._inner if isinstance(array, Opaque) else array


class _Queue:
    """A device queue: jobs run in order on one thread; `pending` jobs can be counted and dropped."""

    def __init__(self) -> None:
        self.jobs: queue.Queue = queue.Queue()
        self.lock = threading.Lock()
        self.by_target: dict[int, list] = {}
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            job = self.jobs.get()
            try:
                if not job[1]:  # not dropped
                    job[0]()
            finally:
                self.jobs.task_done()

    def put(self, work: Callable[[], Any], target: Any = None, drop_previous: bool = False) -> None:
        job = [work, False]
        if target is not None and drop_previous:
            with self.lock:
                for earlier in self.by_target.get(id(target), []):
                    earlier[1] = True  # a lazy framework replaces the pending write to this buffer
                self.by_target[id(target)] = [job]
        self.jobs.put(job)

    def join(self, fraction: float = 1.0) -> None:
        if fraction >= 1.0:
            self.jobs.join()
            return
        left = int(self.jobs.unfinished_tasks * (1.0 - fraction))
        while self.jobs.unfinished_tasks > left:
            threading.Event().wait(1e-5)


class Mutant(NumpyBackend):
    """numpy with one mutation. `separate`: claims its own memory (so memcpy runs on it)."""

    name = "mutant"

    def __init__(self, kind: str = "honest", strength: float = 1.0, separate: bool = False) -> None:
        super().__init__()
        self.kind, self.strength, self.separate = kind, float(strength), separate
        self.calls, self.syncs, self.filled = 0, 0, set()
        self.asynchronous = kind in ASYNC_KINDS
        self.queue = _Queue() if self.asynchronous else None
        self.kept: Any = None

    # -- placement and memory ---------------------------------------------------------------
    def device_ids(self):
        return ["cuda:0"] if self.kind == "claim_device" else ["cpu"]

    def dtypes(self, device):
        return ("float64", "float32")

    def location(self, array):
        return "cuda:0" if self.kind == "claim_device" else "cpu"

    def shares_host_memory(self, device):
        return not self.separate

    def _wrap(self, array):
        return Opaque(array) if self.kind.startswith("opaque") else array

    def empty(self, shape, dtype, device):
        return self._wrap(np.empty(shape, dtype=dtype))

    def from_host(self, array, device, pinned=False):
        if self.kind == "zero_copy_upload":
            return array  # "immutable" host data handed over without a copy
        if self.kind == "skip_fraction" and self.separate:
            out = np.empty_like(array)
            rows = max(1, int(len(array) / self.strength))
            out[:rows] = array[:rows]
            return out
        return self._wrap(np.array(array, copy=True))

    def to_host(self, array):
        if self.queue is not None:
            self.queue.join()
        return np.array(_raw(array), copy=True)

    def fill_nan(self, array):
        if not isinstance(_raw(array), np.ndarray):
            return False
        self.filled.add(id(_raw(array)))  # a cheat that sees the check coming
        _raw(array)[...] = np.nan
        return True

    def astype(self, array, dtype):
        return self._wrap(np.asarray(_raw(array)).astype(dtype))

    def synchronize(self, device):
        self.syncs += 1
        if self.queue is None:
            return
        if self.kind == "sync_stops" and self.syncs > HONEST_SYNCS:
            return
        self.queue.join(1.0 / self.strength if self.kind == "partial_wait" else 1.0)

    # -- the ops: every one goes through _run ------------------------------------------------
    def _run(self, honest: Callable[..., Any], rows: tuple, full: tuple, out: Any) -> Any:
        """`honest(*rows, *full, out)`: an op whose `rows` arrays and output split along axis 0."""
        self.calls += 1
        rows, full, target = tuple(_raw(r) for r in rows), tuple(_raw(f) for f in full), _raw(out)
        kind, k = self.kind, max(1, round(self.strength))
        if kind == "lower_precision":
            low_rows, low_full = tuple(_lower(r) for r in rows), tuple(_lower(f) for f in full)
            if target is None:
                return rows[0].dtype.type(honest(*low_rows, *low_full, None))
            target[...] = honest(*low_rows, *low_full, np.empty(target.shape, low_rows[0].dtype))
            return out
        if target is None:  # an op that returns a new value (a sum)
            return self._new_value(honest, rows, full)
        if kind == "skip_fraction":
            n = max(1, int(len(target) / self.strength))
            honest(*(r[:n] for r in rows), *full, target[:n])
        elif kind == "every_kth":
            if self.calls % k == 1 or k == 1:
                honest(*rows, *full, target)
        elif kind in ("partial_rewrite", "opaque_partial"):
            if id(target) in self.filled or k == 1:
                self.filled.discard(id(target))
                honest(*rows, *full, target)
            else:
                part = slice(len(target) * (self.calls % k) // k, len(target) * (self.calls % k + 1) // k)
                honest(*(r[part] for r in rows), *full, target[part])
        elif self.queue is not None:
            self.queue.put(lambda: honest(*rows, *full, target), target, kind == "drop_overwritten")
        else:
            honest(*rows, *full, target)
        return out

    def _new_value(self, honest, rows, full):
        if self.kind == "skip_fraction":
            n = max(1, int(len(rows[0]) / self.strength))
            return honest(*(r[:n] for r in rows), *full, None)
        if self.kind == "every_kth" and self.kept is not None and self.calls % max(1, round(self.strength)) != 1:
            return self.kept  # the previous call's result, whatever its inputs
        self.kept = honest(*rows, *full, None)
        return self.kept

    def matmul(self, a, b, out=None):
        return self._run(lambda a, b, o: np.matmul(a, b, out=o) if o is not None else np.matmul(a, b),
                         (a,), (b,), out)

    def copy(self, a, out):
        return self._run(lambda a, o: NumpyBackend.copy(self, a, o), (a,), (), out)

    def scale(self, a, scalar, out):
        return self._run(lambda a, o: NumpyBackend.scale(self, a, scalar, o), (a,), (), out)

    def add(self, a, b, out):
        return self._run(lambda a, b, o: NumpyBackend.add(self, a, b, o), (a, b), (), out)

    def triad(self, a, b, scalar, out):
        return self._run(lambda a, b, o: NumpyBackend.triad(self, a, b, scalar, o), (a, b), (), out)

    def elementwise(self, a, out):
        return self._run(lambda a, o: NumpyBackend.elementwise(self, a, o), (a,), (), out)

    def total(self, a):
        def summed(a, o):
            return np.sum(a) if a.dtype != np.float16 else np.float32(np.sum(a, dtype=np.float32))
        return self._run(summed, (a,), (), None)
