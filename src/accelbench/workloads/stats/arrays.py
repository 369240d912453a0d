"""The statistics workloads' view of a backend: its array namespace on one device, or numpy on the host.

Each framework's spelling of the calls that differ (array creation on the device, casts, gathers,
medians, jit, its random generator) is the backend's own: `backend.arrays(device)` returns an
ArrayNamespace (backends/arrays.py), so this module knows no framework by name.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Sequence

import numpy as np

from accelbench.backends.arrays import ACCELERATOR_CHUNK_ELEMENTS, CPU_CHUNK_ELEMENTS, ArrayNamespace
from accelbench.errors import Unsupported

__all__ = ["ACCELERATOR_CHUNK_ELEMENTS", "ArrayOps", "HostOps", "array_ops", "chunk_counts", "map_chunks", "map_draws",
           "parallel_width", "require_dtype"]

#: what the workloads annotate their `ops` with: one backend's namespace on one device
ArrayOps = ArrayNamespace


def array_ops(backend: Any, device: str) -> ArrayNamespace:
    """`backend`'s array namespace on `device`; Unsupported for a kernel-only backend."""
    ops = backend.arrays(device)
    if ops is None:
        raise Unsupported(f"{backend.name} has no array namespace on {device}")
    return ops


def chunk_counts(total: int, chunk: int) -> Iterator[tuple[int, int]]:
    """(start, count) pieces that cover range(total), each at most `chunk` long."""
    for start in range(0, total, chunk):
        yield start, min(chunk, total - start)


def map_chunks(ops: Any, function: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
    """[function(item) for item in items], on the namespace's CPU threads where it has them (numpy:
    its calls release the GIL, so chunks run on all cores), else one after another."""
    run = getattr(ops, "parallel_map", None)
    return run(function, items) if run is not None else [function(item) for item in items]


def parallel_width(ops: Any) -> int:
    """How many items map_chunks runs at once on `ops` (numpy: its CPU threads; elsewhere 1)."""
    width = getattr(ops, "parallel_width", None)
    return max(1, width()) if width is not None else 1


def map_draws(ops: Any, rng: Any, function: Callable[[Any, Any], Any], items: Sequence[Any]) -> list[Any]:
    """[function(item, stream)]: each item draws from a stream of its own where the generator splits
    (numpy: so chunks run in parallel and the draws do not depend on the thread count), else every
    item from `rng`, in order (one stream cannot be shared between threads)."""
    spawn = getattr(rng, "spawn", None)
    if spawn is None:
        return [function(item, rng) for item in items]
    streams = spawn(len(items))
    return map_chunks(ops, lambda index: function(items[index], streams[index]), range(len(items)))


def require_dtype(backend: Any, device: str, dtype: str) -> None:
    if dtype not in backend.dtypes(device):
        raise Unsupported(f"{backend.name} has no {dtype} on {device} (it has {', '.join(backend.dtypes(device))})")


class HostOps:
    """The ArrayOps calls the float64 references use, on the host with numpy.

    Written out apart from ArrayNamespace on purpose: a test that breaks a device call must not
    break the reference it is checked against."""

    xp = np
    chunk_elements = CPU_CHUNK_ELEMENTS

    @staticmethod
    def take(values, indices):
        return values[indices]

    @staticmethod
    def median_rows(array):
        middle = array.shape[1] // 2
        return np.partition(array, middle, axis=1)[:, middle]

    @staticmethod
    def concat(arrays):
        return np.concatenate(arrays) if len(arrays) > 1 else arrays[0]
