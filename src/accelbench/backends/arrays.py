"""A backend's array namespace on one device, with the calls that frameworks spell differently.

Workloads written against an array namespace (the statistics workloads) do most arithmetic with
`ops.xp` (`xp.exp`, `xp.where`, `a.sum(axis=1)` ...), which numpy, torch, jax.numpy and cupy spell
alike. What they do not spell alike lives here: making arrays *on the device*, dtype casts,
joining, gathering, medians, compiling, waiting, and the framework's own random generator.

`ArrayNamespace` is the numpy spelling; a backend whose framework differs returns a subclass from
`Backend.arrays(device)` that overrides only what differs (torch_arrays.py, jax_backend.py,
cupy_backend.py). No framework is imported here: `xp` comes from the backend's `namespace(device)`.
"""
from __future__ import annotations

import contextlib
import math
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


class DeviceRandom:
    """normal / uniform / integers on one device; each call continues the stream.

    Every generator is a pure function of its seed and the sequence of calls, so a check can rebuild
    the stream the timed calls used and a result is reproducible from the seed in its metrics."""

    #: what made the numbers, for the metrics
    name = ""

    def __init__(self, ops: ArrayNamespace, seed: int) -> None:
        self.ops, self.seed = ops, int(seed)

    @classmethod
    def describe(cls, ops: ArrayNamespace) -> str:
        return cls.name

    def normal(self, shape: tuple[int, ...], dtype: str) -> Any:
        raise NotImplementedError

    def uniform(self, shape: tuple[int, ...], dtype: str) -> Any:
        """Uniform on [0, 1)."""
        raise NotImplementedError

    def integers(self, high: int, shape: tuple[int, ...]) -> Any:
        """Uniform integers on [0, high), as the framework's default index type."""
        raise NotImplementedError


class BackendRandom(DeviceRandom):
    """Any backend: its own on-device uniforms (`backend.random`), Box–Muller for normals."""

    def __init__(self, ops: ArrayNamespace, seed: int) -> None:
        super().__init__(ops, seed)
        self.calls = 0

    @classmethod
    def describe(cls, ops: ArrayNamespace) -> str:
        return f"{ops.backend.name}.random + Box-Muller"

    def _uniform_pm1(self, shape, dtype):
        self.calls += 1  # a new, deterministic seed per call so draws never repeat
        seed = (self.seed * 1_000_003 + self.calls) % (2**63)
        return self.ops.backend.random(shape, dtype, self.ops.device, seed)

    def uniform(self, shape, dtype):
        return (self._uniform_pm1(shape, dtype) + 1.0) * 0.5

    def normal(self, shape, dtype):
        count = math.prod(shape)
        half = (count + 1) // 2
        u1 = 1.0 - self.uniform((half,), dtype)   # (0, 1]: log is finite
        u2 = self.uniform((half,), dtype)
        xp = self.ops.xp
        radius = xp.sqrt(-2.0 * xp.log(u1))
        angle = (2.0 * math.pi) * u2
        both = self.ops.concat([radius * xp.cos(angle), radius * xp.sin(angle)])
        return both[:count].reshape(shape)

    def integers(self, high, shape):
        wide = "float64" if self.ops.supports("float64") else "float32"  # float32: fine below 2**24
        scaled = self.ops.xp.floor(self.uniform(shape, wide) * high)
        return self.ops.astype(scaled, self.ops.index_dtype)


class NumpyRandom(DeviceRandom):
    name = "numpy Generator(PCG64)"

    def __init__(self, ops, seed):
        super().__init__(ops, seed)
        self.generator = np.random.Generator(np.random.PCG64(self.seed))

    def normal(self, shape, dtype):
        return self.generator.standard_normal(shape, dtype=np.dtype(dtype))  # float32 drawn natively

    def uniform(self, shape, dtype):
        return self.generator.random(shape, dtype=np.dtype(dtype))

    def integers(self, high, shape):
        return self.generator.integers(0, high, size=shape, dtype=np.int64)

    def spawn(self, count: int) -> list["NumpyRandom"]:
        """`count` independent streams, new at every call (numpy's SeedSequence spawning): chunks that
        each draw from their own can be drawn on several threads, and the draws do not depend on how many."""
        children = []
        for generator in self.generator.spawn(count):
            child = object.__new__(type(self))
            child.ops, child.seed, child.generator = self.ops, self.seed, generator
            children.append(child)
        return children


class ArrayNamespace:
    """One backend's namespace on one device, spelt as numpy spells it."""

    #: True where `jit` compiles a whole step into one launch (so a step is one launch, not one per op)
    compiles_functions = False
    #: the framework's own generator; the default draws with the backend's `random()`
    generator: type[DeviceRandom] = BackendRandom

    def __init__(self, backend: Any, device: str) -> None:
        xp = backend.namespace(device)
        if xp is None:
            raise Unsupported(f"{backend.name} has no array namespace on {device}")
        self.backend, self.device, self.xp = backend, device, xp
        self.chunk_elements = CPU_CHUNK_ELEMENTS if device == "cpu" else ACCELERATOR_CHUNK_ELEMENTS
        #: a one-element array made by the backend: tells the framework where "the device" is
        self.probe = backend.from_host(np.zeros(1), device)

    # -- dtypes ----------------------------------------------------------------------------------
    def dtype(self, name: str) -> Any:
        return getattr(self.xp, name)

    def astype(self, array: Any, name: str) -> Any:
        return array.astype(self.dtype(name))

    @property
    def index_dtype(self) -> str:
        return "int64"

    def supports(self, dtype: str) -> bool:
        return dtype in self.backend.dtypes(self.device)

    # -- arrays made on the device -----------------------------------------------------------------
    @contextlib.contextmanager
    def on_device(self) -> Iterator[None]:
        """Creation calls inside make their arrays on this device (where the framework needs telling)."""
        yield

    def placement(self) -> dict[str, Any]:
        """Keyword arguments that put a new array on this device (torch's device=)."""
        return {}

    def arange(self, start: int, stop: int, dtype: str) -> Any:
        """start, start+1, ... stop-1 as `dtype`, counted in integers so large indices stay exact."""
        with self.on_device():
            counts = self.xp.arange(start, stop, dtype=self.dtype(self.index_dtype), **self.placement())
        return self.astype(counts, dtype)

    def zeros(self, shape: tuple[int, ...], dtype: str) -> Any:
        with self.on_device():
            return self.xp.zeros(shape, dtype=self.dtype(dtype), **self.placement())

    def full(self, shape: tuple[int, ...], value: float, dtype: str) -> Any:
        with self.on_device():
            return self.xp.full(shape, value, dtype=self.dtype(dtype), **self.placement())

    def put(self, host: np.ndarray, dtype: str) -> Any:
        """A host array on the device in `dtype` (bfloat16 is rounded there, from float32)."""
        if dtype in HOST_DTYPES:
            return self.backend.from_host(np.ascontiguousarray(host, dtype=HOST_DTYPES[dtype]), self.device)
        if dtype == "bfloat16":
            return self.backend.astype(self.backend.from_host(host.astype(np.float32), self.device), dtype)
        return self.backend.from_host(np.ascontiguousarray(host), self.device)  # integers

    def to_host64(self, array: Any) -> np.ndarray:
        """A float64 host copy (waits for the device)."""
        return np.asarray(self.backend.to_host(array), dtype=np.float64)

    # -- joining, gathering, ordering ----------------------------------------------------------------
    def concat(self, arrays: list[Any], axis: int = 0) -> Any:
        if len(arrays) == 1:
            return arrays[0]
        return self.xp.concatenate(arrays, axis=axis)

    def stack(self, arrays: list[Any]) -> Any:
        return self.xp.stack(arrays)

    def take(self, values: Any, indices: Any) -> Any:
        """values[indices] for a 1-d `values`."""
        return values[indices]

    def median_rows(self, array: Any) -> Any:
        """The median of each row, for an odd row length (so it is one element, in every framework)."""
        middle = array.shape[1] // 2
        return self.xp.partition(array, middle, axis=1)[:, middle]  # selection, not a full sort

    # -- compiling and waiting -------------------------------------------------------------------------
    def jit(self, function: Any) -> Any:
        """`function` compiled where the framework traces, else as it is. Call once per prepare and
        keep the result (a tracing framework caches compilations per function object)."""
        return function

    def ready(self, *arrays: Any) -> Any:
        """`arrays` (one, or a tuple) finished on the device where `backend.synchronize()` cannot tell."""
        return arrays[0] if len(arrays) == 1 else arrays

    # -- random numbers made on the device ---------------------------------------------------------------
    def random(self, seed: int) -> DeviceRandom:
        """The framework's own generator on this device, seeded."""
        return self.generator(self, seed)

    @property
    def generator_name(self) -> str:
        """What makes the random numbers, for the metrics."""
        return self.generator.describe(self)


class NumpyArrays(ArrayNamespace):
    """numpy itself: the namespace spelling above, and numpy's PCG64 generator; chunks of work run
    on the backend's CPU threads (numpy releases the GIL inside its calls)."""

    generator = NumpyRandom

    def parallel_map(self, function: Any, items: Any) -> list[Any]:
        """[function(item) for item in items] on the threads `backend.threads()` set (in item order)."""
        run = getattr(self.backend, "map_on_threads", None)
        return run(function, items) if run is not None else [function(item) for item in items]

    def parallel_width(self) -> int:
        """How many items parallel_map runs at once now: the CPU threads `backend.threads()` set."""
        threads = getattr(self.backend, "cpu_threads", None)
        return threads() if threads is not None else 1
