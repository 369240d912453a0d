"""Backends that cheat only when they believe a call is not checked (issue 41's "when" axis).

`Sneaky(kind, when, strength)` is the honest numpy backend, except that on calls its `when` rule
takes for unchecked timed calls it applies its `kind` of cheat. A check made apart from the timing
(its own stack, freshly poisoned buffers, short blocks, new input objects) would see it honest;
the audited timing (runner/block_audit.py) must leave it nothing to tell apart.

Kinds (each inflates a rate by about `strength` where it applies):
- skip: only the first 1/strength of the output is computed;
- every_kth: every k-th cheating call does nothing (k = strength);
- lower: float64 computed in float32, float32 on bfloat16-rounded values;
- alias: a copy hands back its input instead of writing its output;
- cache: a call whose inputs' sampled contents match the last call on that output writes nothing;
- partial_wait: asynchronous; synchronize() waits for 1/strength of the queued work;
- threads: the work split over extra threads while the result records one;
- child: half the work done by a child process while the result records one thread.

On the Monte Carlo workload (its draws made through `arrays(device)`, one `spawn` per call): skip
draws 1/strength of the normals and repeats them; every_kth and cache hand back the last call's
draws (every_kth on all but every k-th call); lower draws float64 as float32; threads runs the
chunks on the extra pool while the result records one thread.

Whens: always; stack (honest under a frame named like a check); buffer (honest where its output
shows NaN: a poisoned buffer); depth (cheats only from the 3rd call after a synchronize()); time
(honest within 20 ms of new input objects); identity (cheats on input objects it has seen before).
"""
from __future__ import annotations

import inspect
import multiprocessing
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing import shared_memory
from typing import Any, Callable

import numpy as np
from mutants import _Queue

from accelbench.backends.arrays import NumpyArrays, NumpyRandom
from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.workloads.memory import SCALAR
from accelbench.workloads.verify import round_to_bfloat16

KINDS = ("skip", "every_kth", "lower", "alias", "cache", "partial_wait", "threads", "child")
WHENS = ("always", "stack", "buffer", "depth", "time", "identity")
CHECK_WORDS = ("audit", "check", "prove", "fresh", "verify", "judge", "poison")
FRESH_S = 0.02


def _lower(array: np.ndarray) -> np.ndarray:
    return array.astype(np.float32) if array.dtype == np.float64 else round_to_bfloat16(array)


class _Child:
    """A helper process that multiplies rows of shared-memory matrices (the `child` cheat)."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("spawn")
        self.pipe, remote = context.Pipe()
        self.process = context.Process(target=_serve, args=(remote,), daemon=True)
        self.process.start()

    def run(self, op: str, names: tuple[str, ...], shapes: tuple, dtype: str, rows: slice) -> None:
        self.pipe.send((op, names, shapes, dtype, rows.start, rows.stop))

    def wait(self) -> None:
        self.pipe.recv()


def _serve(pipe) -> None:
    attached: dict[str, shared_memory.SharedMemory] = {}
    while True:
        op, names, shapes, dtype, start, stop = pipe.recv()
        arrays = []
        for name, shape in zip(names, shapes):
            if name not in attached:
                attached[name] = shared_memory.SharedMemory(name=name)
            arrays.append(np.ndarray(shape, dtype=dtype, buffer=attached[name].buf))
        *inputs, out = arrays
        part = slice(start, stop)
        if op == "product":
            np.matmul(inputs[0][part], inputs[1], out=out[part])
        elif op == "triad":
            np.add(inputs[0][part], SCALAR * inputs[1][part], out=out[part])
        elif op == "add":
            np.add(inputs[0][part], inputs[1][part], out=out[part])
        elif op == "scale":
            np.multiply(inputs[0][part], SCALAR, out=out[part])
        elif op == "elementwise":
            np.add(inputs[0][part] * inputs[0][part], inputs[0][part], out=out[part])
        else:  # copy
            out[part] = inputs[0][part]
        pipe.send(True)


class _SneakyStream(NumpyRandom):
    """One chunk's stream of one Monte Carlo call, cheating as its call was judged to."""

    owner: "Sneaky"
    cheat: bool
    index: int

    def normal(self, shape, dtype):
        owner = self.owner
        kind = owner.kind if self.cheat else "honest"
        if kind == "skip":
            part = super().normal((max(1, int(shape[0] / owner.strength)),), dtype)
            return np.resize(part, shape)  # the same draws again: the estimate's true spread grows
        kept = owner.kept_draws.get(self.index)
        if kind in ("every_kth", "cache") and kept is not None and kept.shape == tuple(shape) and \
                (kind == "cache" or owner.calls % max(2, round(owner.strength)) != 0):
            return kept
        if kind == "lower" and np.dtype(dtype) == np.float64:
            draws = super().normal(shape, "float32").astype(np.float64)
        else:
            draws = super().normal(shape, dtype)
        owner.kept_draws[self.index] = draws
        return draws


class _SneakyRandom(NumpyRandom):
    """The generator a Monte Carlo call spawns its chunks' streams from: one spawn, one call."""

    def spawn(self, count: int) -> list[NumpyRandom]:
        owner = self.ops.backend
        cheat = owner.draw_call()
        children = super().spawn(count)
        for index, child in enumerate(children):
            child.__class__ = _SneakyStream
            child.owner, child.cheat, child.index = owner, cheat, index
        return children


class _SneakyArrays(NumpyArrays):
    generator = _SneakyRandom


class Sneaky(NumpyBackend):
    name = "sneaky"

    def __init__(self, kind: str, when: str = "always", strength: float = 2.0, separate: bool = False) -> None:
        super().__init__()
        self.kind, self.when, self.strength, self.separate = kind, when, float(strength), separate
        self.uploads = 0
        self.last_upload: Any = None
        self.last_sum: Any = None
        self.calls = 0
        self.since_sync = 0
        self.seen_ids: set[tuple[int, ...]] = set()
        self.born: dict[tuple[int, ...], float] = {}
        self.fingerprints: dict[int, tuple] = {}
        self.queue = _Queue() if kind == "partial_wait" else None
        self.pool = ThreadPoolExecutor(2) if kind == "threads" else None
        self.child = _Child() if kind == "child" else None
        self.shared: dict[int, shared_memory.SharedMemory] = {}
        self.cheated = 0
        self.kept_draws: dict[int, np.ndarray] = {}
        self.cheating_now = False

    # -- memory: shared where a child process must reach it ---------------------------------
    def _alloc(self, shape, dtype) -> np.ndarray:
        if self.child is None:
            return np.empty(shape, dtype=dtype)
        size = max(1, int(np.prod(shape)) * np.dtype(dtype).itemsize)
        block = shared_memory.SharedMemory(create=True, size=size)
        array = np.ndarray(shape, dtype=dtype, buffer=block.buf)
        self.shared[id(array)] = block
        return array

    def empty(self, shape, dtype, device):
        return self._alloc(shape, dtype)

    def shares_host_memory(self, device):
        return not self.separate  # separate: a "device" of its own memory, so memcpy runs on it

    def from_host(self, array, device, pinned=False):
        """A host-to-device copy; while cheating, only part of it (skip), none (alias: the host array
        itself), or every k-th one (the last upload again)."""
        self.uploads += 1
        cheat = self.separate and self._believes_unchecked(None, (array,))
        if cheat and self.kind == "alias":
            return array
        if cheat and self.kind == "every_kth" and self.last_upload is not None and \
                self.uploads % max(2, round(self.strength)) != 0:
            return self.last_upload
        copy = self._alloc(np.shape(array), np.asarray(array).dtype)
        flat, source = copy.reshape(-1), np.asarray(array).reshape(-1)
        count = max(1, int(flat.size / self.strength)) if cheat and self.kind == "skip" else flat.size
        flat[:count] = source[:count]
        self.last_upload = copy
        return copy

    def to_host(self, array, out=None):
        if self.queue is not None:
            self.queue.join()
        cheat = self.separate and out is not None and self._believes_unchecked(out, (array,))
        if out is None:
            return np.array(array, copy=True)
        if cheat and self.kind == "alias":
            return array  # the "device" memory itself
        flat, source = out.reshape(-1), np.asarray(array).reshape(-1)
        count = max(1, int(flat.size / self.strength)) if cheat and self.kind == "skip" else flat.size
        if not (cheat and self.kind == "every_kth" and self.uploads % max(2, round(self.strength)) != 0):
            flat[:count] = source[:count]
        self.uploads += 1
        return out

    def synchronize(self, device):
        self.since_sync = 0
        if self.queue is None:
            return
        cheating = self._believes_unchecked(None, ())
        self.queue.join(1.0 / self.strength if cheating else 1.0)

    # -- when: does this call look unchecked? -------------------------------------------------
    def _believes_unchecked(self, out: Any, inputs: tuple) -> bool:
        when = self.when
        if when == "always":
            return True
        if when == "stack":  # accelbench's own frames: what a plugin sees above its call
            names = " ".join(frame.function for frame in inspect.stack(0)[2:60]
                             if "/accelbench/" in frame.filename.replace("\\", "/")).lower()
            return not any(word in names for word in CHECK_WORDS)
        if when == "buffer":
            if not isinstance(out, np.ndarray) or not out.size or out.dtype.kind != "f":
                return True
            flat = out.reshape(-1)
            probe = flat[:: max(1, flat.size // 8)][:8]
            return not (np.isnan(flat[0]) or np.isnan(probe).any())
        if when == "depth":
            return self.since_sync >= 2
        key = tuple(id(a) for a in inputs)
        if when == "time":
            born = self.born.setdefault(key, time.perf_counter())
            return time.perf_counter() - born > FRESH_S
        if when == "identity":
            seen = key in self.seen_ids
            self.seen_ids.add(key)
            return seen
        raise ValueError(when)

    # -- the Monte Carlo draws -----------------------------------------------------------------
    def arrays(self, device):
        return _SneakyArrays(self, device)

    def draw_call(self) -> bool:
        """A Monte Carlo call begins: does it look unchecked?"""
        self.calls += 1
        self.since_sync += 1
        self.cheating_now = self._believes_unchecked(None, ())
        self.cheated += self.cheating_now
        return self.cheating_now

    def map_on_threads(self, function, items):
        if self.kind == "threads" and self.cheating_now:
            return list(self.pool.map(function, items))
        return super().map_on_threads(function, items)

    # -- the ops ---------------------------------------------------------------------------
    def _run(self, honest: Callable[..., Any], rows: tuple, full: tuple, out: Any) -> Any:
        self.calls += 1
        self.since_sync += 1
        cheat = self._believes_unchecked(out, rows + full)
        self.cheated += cheat
        if out is None:  # a sum: a new value each call
            data = rows[0]
            if cheat and self.kind == "skip":
                return honest(data[: max(1, int(len(data) / self.strength))], None)
            if cheat and self.kind == "lower":
                return data.dtype.type(honest(_lower(data), None))
            if cheat and self.kind in ("every_kth", "cache") and self.last_sum is not None and \
                    self.calls % max(2, round(self.strength)) != 0:
                return self.last_sum  # the last call's sum again, whatever the inputs now
            self.last_sum = honest(*rows, *full, None)
            return self.last_sum
        kind = self.kind if cheat else "honest"
        if kind == "skip":
            n = max(1, int(len(out) / self.strength))
            honest(*(r[:n] for r in rows), *full, out[:n])
        elif kind == "every_kth":
            if self.calls % max(2, round(self.strength)) != 0:
                honest(*rows, *full, out)
        elif kind == "lower":
            out[...] = honest(*(_lower(r) for r in rows), *(_lower(f) for f in full),
                              np.empty(out.shape, _lower(rows[0]).dtype))
        elif kind == "alias" and not full and len(rows) == 1 and honest.__name__ == "copy":
            return rows[0]
        elif kind == "cache":
            fingerprint = tuple(float(np.asarray(r).reshape(-1)[:: 997].sum()) for r in rows + full)
            if self.fingerprints.get(id(out)) != fingerprint:
                honest(*rows, *full, out)
                self.fingerprints[id(out)] = fingerprint
        elif kind == "partial_wait":
            self.queue.put(lambda: honest(*rows, *full, out))
        elif kind == "threads" and len(out) > 1:
            half = len(out) // 2
            parts = [self.pool.submit(honest, *(r[:half] for r in rows), *full, out[:half]),
                     self.pool.submit(honest, *(r[half:] for r in rows), *full, out[half:])]
            for part in parts:
                part.result()
        elif kind == "child" and len(out) > 1 and all(id(a) in self.shared for a in (*rows, *full, out)):
            arrays = (*rows, *full, out)
            half = len(out) // 2
            self.child.run(honest.__name__, tuple(self.shared[id(a)].name for a in arrays),
                           tuple(a.shape for a in arrays), out.dtype.name, slice(half, len(out)))
            honest(*(r[:half] for r in rows), *full, out[:half])
            self.child.wait()
        elif self.queue is not None:
            self.queue.put(lambda: honest(*rows, *full, out))
        else:
            honest(*rows, *full, out)
        return out

    def matmul(self, a, b, out=None):
        def product(a, b, o):
            return np.matmul(a, b, out=o) if o is not None else np.matmul(a, b)
        return self._run(product, (a,), (b,), out)

    def copy(self, a, out):
        def copy(a, o):
            o[...] = a
            return o
        return self._run(copy, (a,), (), out)

    def scale(self, a, scalar, out):
        def scale(a, o):
            return np.multiply(a, scalar, out=o)
        return self._run(scale, (a,), (), out)

    def add(self, a, b, out):
        def add(a, b, o):
            return np.add(a, b, out=o)
        return self._run(add, (a, b), (), out)

    def triad(self, a, b, scalar, out):
        def triad(a, b, o):
            np.multiply(b, scalar, out=o)
            return np.add(o, a, out=o)
        return self._run(triad, (a, b), (), out)

    def elementwise(self, a, out):
        def elementwise(a, o):
            np.multiply(a, a, out=o)
            return np.add(o, a, out=o)
        return self._run(elementwise, (a,), (), out)

    def total(self, a):
        def summed(a, o):
            return np.sum(a)
        return self._run(summed, (a,), (), None)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False)
        if self.child is not None:
            self.child.process.terminate()
        for block in self.shared.values():
            try:
                block.close()
                block.unlink()
            except OSError:
                pass
        self.shared.clear()


__all__ = ["KINDS", "WHENS", "Sneaky"]
