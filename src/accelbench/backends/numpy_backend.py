"""numpy on the CPU: the baseline every accelerator is compared with.

Transfers on the CPU are honest memcpys (from_host and to_host copy). Memory-bound ops that
need two ufunc passes (triad, elementwise) run in cache-sized blocks, so the intermediate stays
in cache and each array crosses the memory bus once, as the STREAM byte count assumes.
numpy's float16 has no BLAS (matmul is a slow scalar loop), so it is not offered.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from accelbench.backends.arrays import NumpyArrays
from accelbench.backends.base import ArrayNamespaceOps, Availability
from accelbench.errors import Unsupported, UsageError

DEVICE = "cpu"
_DTYPES = ("float64", "float32")
# elements per block for two-pass ops: 1 MiB of float64 per operand, well inside L2 + L3
BLOCK_ELEMENTS = 1 << 17


def _check_device(device: str) -> None:
    if device != DEVICE:
        raise UsageError(f"numpy runs only on {DEVICE!r}, not {device!r}")


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


def blas_threads() -> int | None:
    """Threads numpy's BLAS uses now, read back from the loaded library (None: no BLAS found)."""
    from threadpoolctl import threadpool_info

    counts = [lib["num_threads"] for lib in threadpool_info() if lib.get("user_api") == "blas"]
    return max(counts) if counts else None


class NumpyBackend(ArrayNamespaceOps):
    name = "numpy"
    asynchronous = False

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

    # -- ops: the shared namespace versions, except the two-pass ones ------------------------
    def triad(self, a, b, scalar, out):
        for a_block, b_block, out_block in _blocks(a, b, out):
            np.multiply(b_block, scalar, out=out_block)
            np.add(out_block, a_block, out=out_block)
        return out

    def elementwise(self, a, out):
        for a_block, out_block in _blocks(a, out):
            np.multiply(a_block, a_block, out=out_block)
            np.add(out_block, a_block, out=out_block)
        return out

    # -- CPU threads -------------------------------------------------------------------------
    @contextlib.contextmanager
    def threads(self, count: int | None) -> Iterator[int | None]:
        """BLAS and OpenMP limited to `count`; yields the BLAS thread count read back."""
        if count is None:
            yield blas_threads()
            return
        if count < 1:
            raise UsageError(f"threads must be at least 1, not {count}")
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=count):
            yield blas_threads()
