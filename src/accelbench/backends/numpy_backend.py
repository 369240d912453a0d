"""numpy on the CPU: the baseline every accelerator is compared with.

Transfers on the CPU are honest memcpys (from_host and to_host copy). Memory-bound ops that
need two ufunc passes (triad, elementwise) run in cache-sized blocks, so the intermediate stays
in cache and each array crosses the memory bus once, as the STREAM byte count assumes.
numpy's float16 has no BLAS (matmul is a slow scalar loop), so it is not offered.

numpy's element-wise ops run on one thread whatever BLAS is told, so with more than one thread
the memory-bound ops (copy, scale, add, triad, elementwise, total) split their arrays into pieces
handed to a pool of threads (cpu_pool.py): numpy releases the GIL inside each ufunc, so "all cores"
really uses all cores. The thread count is the one `threads(count)` sets (None: every usable core).
"""
from __future__ import annotations

import contextlib
import functools
import math
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from accelbench.backends.arrays import NumpyArrays
from accelbench.backends.base import Availability, framework_of
from accelbench.backends.framework_ops import ArrayNamespaceOps
from accelbench.backends.cpu_pool import shared_pool
from accelbench.errors import Unsupported, UsageError
from accelbench.vocabulary import usable_cpus

DEVICE = "cpu"
_DTYPES = ("float64", "float32")
# elements per block for two-pass ops: 1 MiB of float64 per operand, well inside L2 + L3
BLOCK_ELEMENTS = 1 << 17
# pieces handed to the pool threads: several per thread, so a core busy elsewhere slows one thread
# by less than a whole share; below PARALLEL_MIN_ELEMENTS per thread waking a thread costs more
PIECES_PER_THREAD = 4
PARALLEL_MIN_ELEMENTS = 1 << 16


def _check_device(device: str) -> None:
    if device != DEVICE:
        raise UsageError(f"numpy runs only on {DEVICE!r}, not {device!r}", refused_devices=(device,))


def _check_dtype(dtype: str) -> np.dtype:
    if dtype not in _DTYPES:
        raise Unsupported(f"numpy computes in {', '.join(_DTYPES)} on cpu, not {dtype}")
    return np.dtype(dtype)


def _blocks(*arrays: np.ndarray) -> Iterator[tuple[np.ndarray, ...]]:
    """Matching flat blocks of same-shaped C-contiguous arrays (the whole arrays otherwise)."""
    shape = arrays[0].shape
    if not all(a.shape == shape and a.flags.c_contiguous for a in arrays):
        yield arrays
        return
    flat = [a.reshape(-1) for a in arrays]
    size = flat[0].size
    for start in range(0, size, BLOCK_ELEMENTS):
        stop = start + BLOCK_ELEMENTS
        yield tuple(f[start:stop] for f in flat)


def _pieces(size: int, threads: int) -> list[slice]:
    """Contiguous slices covering range(size), whole blocks each, about PIECES_PER_THREAD per thread."""
    count = max(1, min(threads * PIECES_PER_THREAD, size // PARALLEL_MIN_ELEMENTS))
    step = math.ceil(math.ceil(size / count) / BLOCK_ELEMENTS) * BLOCK_ELEMENTS
    return [slice(start, min(start + step, size)) for start in range(0, size, step)]


def _copy(a: np.ndarray, out: np.ndarray) -> None:
    out[...] = a


def _triad_blocks(a: np.ndarray, b: np.ndarray, out: np.ndarray, scalar: float) -> None:
    """out = a + scalar·b a cache-sized block at a time: each array crosses the memory bus once."""
    for a_block, b_block, out_block in _blocks(a, b, out):
        np.multiply(b_block, scalar, out=out_block)
        np.add(out_block, a_block, out=out_block)


def _elementwise_blocks(a: np.ndarray, out: np.ndarray) -> None:
    for a_block, out_block in _blocks(a, out):
        np.multiply(a_block, a_block, out=out_block)
        np.add(out_block, a_block, out=out_block)


@functools.lru_cache(maxsize=1)
def _blas_controller() -> Any:
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController().select(user_api="blas")  # found once: the scan costs ~1 ms


@contextlib.contextmanager
def _one_blas_thread() -> Iterator[None]:
    with _blas_controller().limit(limits=1):  # ~15 µs
        yield


def blas_threads() -> int | None:
    """Threads numpy's BLAS uses now, read back from the loaded library (None: no BLAS found)."""
    from threadpoolctl import threadpool_info

    counts = [lib["num_threads"] for lib in threadpool_info() if lib.get("user_api") == "blas"]
    return max(counts) if counts else None


class NumpyBackend(ArrayNamespaceOps):
    name = "numpy"
    asynchronous = False
    #: threads the element-wise ops use, as `threads(count)` set them (None: every usable core)
    _cpu_threads: int | None = None

    # -- discovery -------------------------------------------------------------------------
    def availability(self) -> Availability:
        return Availability(True)

    def device_ids(self) -> list[str]:
        return [DEVICE]

    def dtypes(self, device: str) -> tuple[str, ...]:
        _check_device(device)
        return _DTYPES

    def versions(self) -> dict[str, str]:
        from threadpoolctl import threadpool_info

        found = {"numpy": np.__version__}
        for lib in threadpool_info():
            if lib.get("user_api") == "blas":
                detail = ", ".join(str(lib[k]) for k in ("architecture", "threading_layer") if lib.get(k))
                found["blas"] = f"{lib.get('internal_api')} {lib.get('version')}" + (f" ({detail})" if detail else "")
                break
        return found

    # -- data movement: real copies, so a CPU "transfer" costs what a memcpy costs ----------
    def from_host(self, array: np.ndarray, device: str, pinned: bool = False) -> np.ndarray:
        _check_device(device)
        if pinned:
            raise Unsupported("numpy has no pinned host memory")
        return np.array(array, copy=True)

    def to_host(self, array: Any) -> np.ndarray:
        return np.array(array, copy=True)

    def location(self, array: Any) -> str:
        return DEVICE  # ndarrays and numpy scalars (from total) both live in host memory

    def observe_placement(self, array: object) -> str | None:
        return DEVICE if framework_of(array) == "numpy" else None  # numpy has host memory only

    def synchronize(self, device: str) -> None:
        """numpy returns only when the work is done: nothing to wait for."""

    # -- arrays ------------------------------------------------------------------------------
    def namespace(self, device: str) -> Any:
        _check_device(device)
        return np

    def reach_id(self, device) -> str | None:
        return DEVICE if device.id == DEVICE else None

    def arrays(self, device: str) -> NumpyArrays:
        return NumpyArrays(self, device)

    def _xp(self, array: Any) -> Any:
        return np

    def random(self, shape: tuple[int, ...], dtype: str, device: str, seed: int) -> np.ndarray:
        _check_device(device)
        wanted = _check_dtype(dtype)
        generator = np.random.Generator(np.random.PCG64(seed))
        if wanted == np.float64:
            return generator.uniform(-1.0, 1.0, size=shape)
        # float32 drawn directly: 2x - 1 on [0, 1) is exact in float32 and stays below 1
        values = generator.random(shape, dtype=wanted)
        values *= 2
        values -= 1
        return values

    def empty(self, shape: tuple[int, ...], dtype: str, device: str) -> np.ndarray:
        _check_device(device)
        return np.empty(shape, dtype=_check_dtype(dtype))

    def astype(self, array: Any, dtype: str) -> np.ndarray:
        return np.asarray(array).astype(_check_dtype(dtype), copy=True)

    # -- ops: memory-bound ones over the thread pool; two-pass ones in cache-sized blocks ------
    def cpu_threads(self) -> int:
        """Threads the element-wise ops use now: the count `threads()` set, else every usable core."""
        return self._cpu_threads or usable_cpus()

    def implementation(self) -> str:
        """How the memory-bound ops run now, for a result's record: "numpy, 2 threads, blocked"."""
        threads = self.cpu_threads()
        return f"numpy, {threads} thread{'s' if threads != 1 else ''}, blocked"

    def map_on_threads(self, function: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
        """[function(item) for item in items] on the pool's threads, BLAS on one thread inside (N
        pool threads each running N BLAS threads would oversubscribe the cores)."""
        items, threads = list(items), self.cpu_threads()
        if threads < 2 or len(items) < 2:
            return [function(item) for item in items]
        with _one_blas_thread():
            return shared_pool().run(function, items, threads)

    def _over_pieces(self, work: Callable[..., Any], *arrays: np.ndarray) -> list[Any] | None:
        """[work(*matching flat pieces)] on the pool; None where one thread is asked for or pays."""
        threads, shape = self.cpu_threads(), arrays[0].shape
        if threads < 2 or arrays[0].size < 2 * PARALLEL_MIN_ELEMENTS:
            return None
        if not all(a.shape == shape and a.flags.c_contiguous for a in arrays):
            return None
        flat = [a.reshape(-1) for a in arrays]
        return shared_pool().run(lambda piece: work(*(f[piece] for f in flat)), _pieces(flat[0].size, threads),
                                 threads)

    def copy(self, a, out):
        if self._over_pieces(_copy, a, out) is None:
            _copy(a, out)
        return out

    def scale(self, a, scalar, out):
        if self._over_pieces(lambda a_piece, out_piece: np.multiply(a_piece, scalar, out=out_piece), a, out) is None:
            np.multiply(a, scalar, out=out)
        return out

    def add(self, a, b, out):
        if self._over_pieces(lambda a_piece, b_piece, out_piece: np.add(a_piece, b_piece, out=out_piece),
                             a, b, out) is None:
            np.add(a, b, out=out)
        return out

    def triad(self, a, b, scalar, out):
        if self._over_pieces(lambda *pieces: _triad_blocks(*pieces, scalar), a, b, out) is None:
            _triad_blocks(a, b, out, scalar)
        return out

    def elementwise(self, a, out):
        if self._over_pieces(_elementwise_blocks, a, out) is None:
            _elementwise_blocks(a, out)
        return out

    def total(self, a):
        partials = self._over_pieces(np.sum, a)
        if partials is None:
            return np.sum(a)
        # each piece summed pairwise in the dtype, as np.sum does; the few partials added exactly
        return np.asarray(a).dtype.type(math.fsum(float(p) for p in partials))

    # -- CPU threads -------------------------------------------------------------------------
    @contextlib.contextmanager
    def threads(self, count: int | None) -> Iterator[int | None]:
        """BLAS and OpenMP limited to `count`, and the element-wise ops on `count` pool threads
        (None: every usable core); yields the BLAS thread count read back."""
        if count is not None and count < 1:
            raise UsageError(f"threads must be at least 1, not {count}")
        before = self._cpu_threads
        self._cpu_threads = count or usable_cpus()
        try:
            if count is None:
                yield blas_threads()
                return
            from threadpoolctl import threadpool_limits

            with threadpool_limits(limits=count):
                yield blas_threads()
        finally:
            self._cpu_threads = before
