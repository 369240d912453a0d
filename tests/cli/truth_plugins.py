"""A third party's `accelbench.backends` plugin: one dishonest backend per class of issue #26, and an
honest asynchronous one. tests/cli/test_truth_plugins.py installs this file as a package (with its
.dist-info and entry points) and runs each backend through `accelbench run --json`.

These are written apart from tests/mutants.py (the adversary suite the checks were built with) and
from benchmarks/dishonest_cli.py; each models a bug or cheat a real array library could have:

- `sync_tires`: a device queue of bounded depth whose synchronize() stops waiting once the
  backend has been in use for a while (a driver whose wait times out);
- `queued_writes`: memory-bound ops go to a copy queue; synchronize() waits for the compute
  queue only (matmul), so queued writes are never waited for;
- `lazy_graph`: ops are recorded, not run; synchronize() runs what is pending, but an op that
  writes a buffer replaces the pending op on that buffer (a lazy graph's dead-write elimination);
- `peek_partial`: rewrites a third of the output per call, and all of it when its inputs change
  or when a few sampled output elements are not what it last wrote (it sees a poison coming);
- `sgemm_for_dgemm`: a float64 product computed in float32, handed back as float64;
- `repin`: widens its CPU affinity to every core and runs products on two threads, while the run
  asked for the cores it was given;
- `zero_copy`: a host-to-device "upload" that hands back a read-only view of the host array;
- `half_draws` (issue 41): a Monte Carlo generator that, after its first few calls, draws half the
  normals it is asked for and repeats them to the length asked (a buffer "optimisation");
- `reused_draws` (issue 41): every other Monte Carlo call hands back the previous call's draws;
- `honest_async`: the same ops on a worker thread, with a synchronize() that waits for all of them.
"""
from __future__ import annotations

import collections
import concurrent.futures
import os
import threading
import time

import numpy as np

from accelbench.backends.arrays import NumpyArrays, NumpyRandom
from accelbench.backends.numpy_backend import NumpyBackend

QUEUE_DEPTH = 16       # a launch blocks while this many are pending, as a GPU's queue does
# sync_tires: synchronize() waits for this long after its first use. Shorter than any quick measurement:
# with 1 s, the first spec measured (stream copy) sometimes ended within the honest second, 1.7 ms a call
# and every wait real, and was rightly valid; the cheat must start while a spec is timed to be one
HONEST_FOR_S = 0.2


def _copy(a, out):
    np.copyto(out, a)


def _triad(a, b, scalar, out):
    np.multiply(b, scalar, out=out)
    np.add(out, a, out=out)


def _matmul(a, b, out):
    np.matmul(a, b, out=out)


class _Queued(NumpyBackend):
    """Ops run in order on one worker thread; to_host waits for all of them (a read-back is honest)."""

    asynchronous = True
    queued_ops = ("copy", "triad", "matmul")

    def __init__(self) -> None:
        super().__init__()
        self._worker = concurrent.futures.ThreadPoolExecutor(1)
        self._pending: collections.deque = collections.deque()
        self._kinds: dict = {}

    def _launch(self, kind, function, *args):
        while len(self._pending) >= QUEUE_DEPTH:
            self._pending.popleft().result()
        job = self._worker.submit(function, *args)
        self._pending.append(job)
        self._kinds[job] = kind
        return args[-1]

    def _wait(self, kinds=None) -> None:
        for job in list(self._pending):
            if kinds is None or self._kinds.get(job) in kinds:
                job.result()
        self._pending = collections.deque(j for j in self._pending if not j.done())
        self._kinds = {j: k for j, k in self._kinds.items() if not j.done()}

    def copy(self, a, out):
        return self._launch("copy", _copy, a, out)

    def triad(self, a, b, scalar, out):
        return self._launch("triad", _triad, a, b, scalar, out)

    def matmul(self, a, b, out=None):
        target = out if out is not None else np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
        return self._launch("matmul", _matmul, a, b, target)

    def to_host(self, array):
        self._wait()
        return super().to_host(array)

    def wait_for(self, array) -> None:
        return None


class HonestAsync(_Queued):
    name = "honest_async"

    def synchronize(self, device: str) -> None:
        self._wait()


class SyncTires(_Queued):
    name = "sync_tires"
    _first_use = None

    def synchronize(self, device: str) -> None:
        now = time.monotonic()
        if self._first_use is None:
            self._first_use = now
        if now - self._first_use < HONEST_FOR_S:
            self._wait()


class QueuedWrites(_Queued):
    name = "queued_writes"

    def synchronize(self, device: str) -> None:
        self._wait(kinds=("matmul",))


class LazyGraph(NumpyBackend):
    name = "lazy_graph"
    asynchronous = True

    def __init__(self) -> None:
        super().__init__()
        self._graph: dict = {}   # id(buffer) -> the op that will write it
        self._lock = threading.Lock()

    def _record(self, out, function, *args):
        with self._lock:
            self._graph[id(out)] = (function, args)  # a later write to a buffer replaces the earlier one
        return out

    def _run(self) -> None:
        with self._lock:
            pending, self._graph = list(self._graph.values()), {}
        for function, args in pending:
            function(*args)

    def copy(self, a, out):
        return self._record(out, _copy, a, out)

    def triad(self, a, b, scalar, out):
        return self._record(out, _triad, a, b, scalar, out)

    def matmul(self, a, b, out=None):
        target = out if out is not None else np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
        return self._record(target, _matmul, a, b, target)

    def synchronize(self, device: str) -> None:
        self._run()

    def to_host(self, array):
        self._run()
        return super().to_host(array)


class PeekPartial(NumpyBackend):
    name = "peek_partial"
    SAMPLES = 8

    def __init__(self) -> None:
        super().__init__()
        self._state: dict = {}   # id(out) -> (inputs' identity and samples, output samples, next third)

    def _signature(self, array) -> tuple:
        flat = array.reshape(-1)
        picks = np.linspace(0, flat.size - 1, self.SAMPLES).astype(np.int64)
        return tuple(flat[picks].tolist())

    def _partial(self, out, inputs, compute_rows) -> None:
        key = tuple((id(x), self._signature(x)) for x in inputs)
        known = self._state.get(id(out))
        rows = out.shape[0]
        if known is None or known[0] != key or known[1] != self._signature(out):
            compute_rows(slice(0, rows))
            turn = 0
        else:
            turn = known[2]
            third = -(-rows // 3)
            compute_rows(slice(turn * third, min(rows, (turn + 1) * third)))
            turn = (turn + 1) % 3
        self._state[id(out)] = (key, self._signature(out), turn)

    def copy(self, a, out):
        self._partial(out, (a,), lambda s: np.copyto(out[s], a[s]))
        return out

    def triad(self, a, b, scalar, out):
        self._partial(out, (a, b), lambda s: _triad(a[s], b[s], scalar, out[s]))
        return out

    def matmul(self, a, b, out=None):
        if out is None:
            return np.matmul(a, b)
        self._partial(out, (a, b), lambda s: np.matmul(a[s], b, out=out[s]))
        return out


class SgemmForDgemm(NumpyBackend):
    name = "sgemm_for_dgemm"

    def matmul(self, a, b, out=None):
        product = np.matmul(a.astype(np.float32), b.astype(np.float32))
        if out is None:
            return product.astype(a.dtype)
        out[...] = product
        return out


class Repin(NumpyBackend):
    name = "repin"
    _pool = None

    def _workers(self):
        if self._pool is None:
            os.sched_setaffinity(0, range(os.cpu_count() or 1))  # workers started now inherit every core
            self._pool = concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1)
        return self._pool

    def matmul(self, a, b, out=None):
        target = out if out is not None else np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
        pool = self._workers()
        rows = np.array_split(np.arange(a.shape[0]), pool._max_workers)
        jobs = [pool.submit(np.matmul, a[r[0]:r[-1] + 1], b, out=target[r[0]:r[-1] + 1]) for r in rows if r.size]
        for job in jobs:
            job.result()
        return target


class ZeroCopy(NumpyBackend):
    name = "zero_copy"

    def shares_host_memory(self, device: str) -> bool:
        return False  # claims a device memory of its own

    def from_host(self, array, device, pinned=False):
        view = array.view()
        view.flags.writeable = False
        return view


# -- Monte Carlo draws (issue 41) -------------------------------------------------------------------

HONEST_CALLS = 3  # half_draws is honest for its first calls: a start probe or a first check sees those


class _DrawStream(NumpyRandom):
    """One chunk's stream of one Monte Carlo call; its backend decides what the draws are."""

    def normal(self, shape, dtype):
        return self.ops.backend.draws(self, shape, dtype)

    def honest_normal(self, shape, dtype):
        return super().normal(shape, dtype)


class _CallRandom(NumpyRandom):
    def spawn(self, count):
        self.ops.backend.monte_carlo_calls += 1
        children = super().spawn(count)
        for index, child in enumerate(children):
            child.__class__, child.index = _DrawStream, index
        return children


class _DrawArrays(NumpyArrays):
    generator = _CallRandom


class _DrawBackend(NumpyBackend):
    def __init__(self) -> None:
        super().__init__()
        self.monte_carlo_calls = 0
        self.kept: dict[int, np.ndarray] = {}

    def arrays(self, device):
        return _DrawArrays(self, device)

    def draws(self, stream, shape, dtype):
        return stream.honest_normal(shape, dtype)


class HalfDraws(_DrawBackend):
    def draws(self, stream, shape, dtype):
        if self.monte_carlo_calls <= HONEST_CALLS:
            return stream.honest_normal(shape, dtype)
        return np.resize(stream.honest_normal((max(1, shape[0] // 2),), dtype), shape)


class ReusedDraws(_DrawBackend):
    def draws(self, stream, shape, dtype):
        kept = self.kept.get(stream.index)
        if self.monte_carlo_calls % 2 == 0 and kept is not None and kept.shape == tuple(shape):
            return kept
        self.kept[stream.index] = stream.honest_normal(shape, dtype)
        return self.kept[stream.index]
