"""The few array calls that differ between numpy, torch, jax.numpy and cupy, for one device.

The statistics workloads do their arithmetic with the backend's namespace (`ops.xp.exp`, `xp.where`,
`a.sum(axis=1)` ...), which all four spell alike. What they do not spell alike is below: making a
new array *on the device* (arange, zeros), dtype casts, joining, sorting, and moving a host array in.
No framework is imported here: each comes from the backend's own `namespace(device)`.
"""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from accelbench.errors import Unsupported

HOST_DTYPES = {"float64": np.float64, "float32": np.float32, "float16": np.float16}
# elements per chunk in the streaming workloads. On a CPU, 256 Ki (2 MiB per float64 temporary)
# keeps temporaries near the cache and the allocator's memory reused: measured here, torch ran 2-3x
# slower with 4 Mi chunks (fresh 32 MiB arrays, page-faulted in each time) and numpy within ±30%
# of this. An accelerator wants big launches: 4 Mi elements (32 MiB) per temporary.
CPU_CHUNK_ELEMENTS = 1 << 18
ACCELERATOR_CHUNK_ELEMENTS = 1 << 22


def chunk_counts(total: int, chunk: int) -> Iterator[tuple[int, int]]:
    """(start, count) pieces that cover range(total), each at most `chunk` long."""
    for start in range(0, total, chunk):
        yield start, min(chunk, total - start)


def namespace_kind(xp: Any) -> str:
    """"numpy" | "torch" | "jax" | "cupy" | the module's own name, from the namespace module."""
    name = getattr(xp, "__name__", "")
    return "jax" if name.startswith("jax") else name.split(".")[0]


class ArrayOps:
    """One backend's namespace on one device, with the calls that need more than the namespace."""

    def __init__(self, backend: Any, device: str) -> None:
        xp = backend.namespace(device)
        if xp is None:
            raise Unsupported(f"{backend.name} has no array namespace on {device}")
        self.backend, self.device, self.xp = backend, device, xp
        self.kind = namespace_kind(xp)
        self.chunk_elements = CPU_CHUNK_ELEMENTS if device == "cpu" else ACCELERATOR_CHUNK_ELEMENTS
        #: a one-element array made by the backend: tells torch/jax/cupy where "the device" is
        self.probe = backend.from_host(np.zeros(1), device)

    # -- dtypes --------------------------------------------------------------------------------
    def dtype(self, name: str) -> Any:
        return getattr(self.xp, name)

    def astype(self, array: Any, name: str) -> Any:
        if self.kind == "torch":
            return array.to(getattr(self.xp, name))
        return array.astype(self.dtype(name))

    # -- arrays made on the device ---------------------------------------------------------------
    @contextlib.contextmanager
    def on_device(self) -> Iterator[None]:
        """Creation calls inside make their arrays on this device (jax and cupy need telling)."""
        if self.kind == "jax":
            import jax  # already imported: the backend gave us jax.numpy

            (device,) = tuple(self.probe.devices())
            with jax.default_device(device):
                yield
        elif self.kind == "cupy":
            with self.probe.device:
                yield
        else:
            yield

    def _placement(self) -> dict:
        return {"device": self.probe.device} if self.kind == "torch" else {}

    @property
    def index_dtype(self) -> str:
        """int64, except in jax without x64 (int32 there: enough below 2³¹ elements)."""
        return "int32" if self.kind == "jax" and "float64" not in self.backend.dtypes(self.device) else "int64"

    def arange(self, start: int, stop: int, dtype: str) -> Any:
        """start, start+1, ... stop-1 as `dtype`, counted in integers so large indices stay exact."""
        with self.on_device():
            counts = self.xp.arange(start, stop, dtype=self.dtype(self.index_dtype), **self._placement())
        return self.astype(counts, dtype)

    def zeros(self, shape: tuple[int, ...], dtype: str) -> Any:
        with self.on_device():
            return self.xp.zeros(shape, dtype=self.dtype(dtype), **self._placement())

    def full(self, shape: tuple[int, ...], value: float, dtype: str) -> Any:
        with self.on_device():
            return self.xp.full(shape, value, dtype=self.dtype(dtype), **self._placement())

    def put(self, host: np.ndarray, dtype: str) -> Any:
        """A host array on the device in `dtype` (bfloat16 is rounded there, from float32)."""
        if dtype in HOST_DTYPES:
            return self.backend.from_host(np.ascontiguousarray(host, dtype=HOST_DTYPES[dtype]), self.device)
        if dtype == "bfloat16":
            return self.backend.astype(self.backend.from_host(host.astype(np.float32), self.device), dtype)
        return self.backend.from_host(np.ascontiguousarray(host), self.device)  # integers

    # -- joining and ordering --------------------------------------------------------------------
    def concat(self, arrays: list[Any], axis: int = 0) -> Any:
        if len(arrays) == 1:
            return arrays[0]
        if self.kind == "torch":
            return self.xp.cat(arrays, dim=axis)
        return self.xp.concatenate(arrays, axis=axis)

    def jit(self, function: Any) -> Any:
        """`function` compiled where the framework traces (jax.jit), else as it is. Call once per
        prepare and keep the result: jax caches compilations per function object."""
        if self.kind == "jax":
            import jax  # already imported by the backend

            return jax.jit(function)
        return function

    def ready(self, *arrays: Any) -> Any:
        """Return `arrays` (one, or a tuple) finished on the device where the backend cannot tell.

        The jax backend's synchronize() waits only on arrays it made itself, so results made with
        jax.numpy here are waited on before they are handed back; the other frameworks'
        synchronize() covers the whole device."""
        if self.kind == "jax":
            for array in arrays:
                array.block_until_ready()
        return arrays[0] if len(arrays) == 1 else arrays

    def stack(self, arrays: list[Any]) -> Any:
        return self.xp.stack(arrays)

    def take(self, values: Any, indices: Any) -> Any:
        """values[indices] for a 1-d `values` (torch's index_select is ~10x its fancy indexing on CPU)."""
        if self.kind == "torch":
            return values.index_select(0, indices.reshape(-1)).reshape(indices.shape)
        return values[indices]

    def median_rows(self, array: Any) -> Any:
        """The median of each row, for an odd row length (so it is one element, in every framework)."""
        middle = array.shape[1] // 2
        if self.kind == "torch":
            return self.xp.median(array, dim=1).values  # torch's lower median: the median when odd
        if self.kind in ("numpy", "cupy"):
            return self.xp.partition(array, middle, axis=1)[:, middle]  # selection, not a full sort
        return self.xp.sort(array, axis=1)[:, middle]

    def to_host64(self, array: Any) -> np.ndarray:
        """A float64 host copy (waits for the device)."""
        return np.asarray(self.backend.to_host(array), dtype=np.float64)

    def supports(self, dtype: str) -> bool:
        return dtype in self.backend.dtypes(self.device)


def require_dtype(backend: Any, device: str, dtype: str) -> None:
    if dtype not in backend.dtypes(device):
        raise Unsupported(f"{backend.name} has no {dtype} on {device} (it has {', '.join(backend.dtypes(device))})")


class HostOps:
    """The ArrayOps calls the float64 references use, on the host with numpy."""

    xp, kind = np, "numpy"
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
