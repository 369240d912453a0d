"""Random numbers made on the device, by each framework's own generator, from a recorded seed.

numpy: Generator(PCG64); torch: torch.Generator on the device; jax: a threefry key split per call;
cupy: its Generator. Nothing is drawn on the host and copied over, so the time of drawing is part of
what an accelerator is measured on. A backend outside these four gets its uniforms from its own
`backend.random()` (on its device) and its normals by Box–Muller. The OpenCL kernels draw in-kernel
from a counter-based stream instead (stats/opencl_kernels.py).

Every generator is a pure function of its seed and the sequence of calls, so `verify` can rebuild
the stream the timed calls used and a result is reproducible from the seed in its metrics.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from accelbench.workloads.stats.arrays import ArrayOps


class DeviceRandom:
    """normal / uniform / integers on one device; each call continues the stream."""

    def __init__(self, ops: ArrayOps, seed: int) -> None:
        self.ops, self.seed = ops, int(seed)

    def normal(self, shape: tuple[int, ...], dtype: str) -> Any:
        raise NotImplementedError

    def uniform(self, shape: tuple[int, ...], dtype: str) -> Any:
        """Uniform on [0, 1)."""
        raise NotImplementedError

    def integers(self, high: int, shape: tuple[int, ...]) -> Any:
        """Uniform integers on [0, high), as the framework's default index type."""
        raise NotImplementedError


class NumpyRandom(DeviceRandom):
    def __init__(self, ops, seed):
        super().__init__(ops, seed)
        self.generator = np.random.Generator(np.random.PCG64(self.seed))

    def normal(self, shape, dtype):
        return self.generator.standard_normal(shape, dtype=np.dtype(dtype))  # float32 drawn natively

    def uniform(self, shape, dtype):
        return self.generator.random(shape, dtype=np.dtype(dtype))

    def integers(self, high, shape):
        return self.generator.integers(0, high, size=shape, dtype=np.int64)


class TorchRandom(DeviceRandom):
    def __init__(self, ops, seed):
        super().__init__(ops, seed)
        self.torch = ops.xp
        self.where = ops.probe.device
        self.generator = self.torch.Generator(device=self.where)
        self.generator.manual_seed(self.seed)

    def normal(self, shape, dtype):
        return self.torch.randn(shape, generator=self.generator, dtype=self.ops.dtype(dtype), device=self.where)

    def uniform(self, shape, dtype):
        return self.torch.rand(shape, generator=self.generator, dtype=self.ops.dtype(dtype), device=self.where)

    def integers(self, high, shape):
        return self.torch.randint(0, high, shape, generator=self.generator, device=self.where)


class JaxRandom(DeviceRandom):
    def __init__(self, ops, seed):
        super().__init__(ops, seed)
        import jax  # the backend has imported it already

        self.random = jax.random
        make_key = getattr(jax.random, "key", None) or jax.random.PRNGKey
        with ops.on_device():
            self.key = make_key(self.seed)

    def _next(self):
        self.key, sub = self.random.split(self.key)
        return sub

    def normal(self, shape, dtype):
        with self.ops.on_device():
            return self.random.normal(self._next(), shape, dtype=self.ops.dtype(dtype))

    def uniform(self, shape, dtype):
        with self.ops.on_device():
            return self.random.uniform(self._next(), shape, dtype=self.ops.dtype(dtype))

    def integers(self, high, shape):
        with self.ops.on_device():
            return self.random.randint(self._next(), shape, 0, high)


class CupyRandom(DeviceRandom):
    def __init__(self, ops, seed):
        super().__init__(ops, seed)
        with ops.on_device():
            self.generator = ops.xp.random.default_rng(self.seed)

    def normal(self, shape, dtype):
        with self.ops.on_device():
            return self.generator.standard_normal(shape, dtype=self.ops.dtype(dtype))

    def uniform(self, shape, dtype):
        with self.ops.on_device():
            return self.generator.random(shape, dtype=self.ops.dtype(dtype))

    def integers(self, high, shape):
        with self.ops.on_device():
            return self.generator.integers(0, high, size=shape)


class BackendRandom(DeviceRandom):
    """Any other backend: its own on-device uniforms (`backend.random`), Box–Muller for normals."""

    def __init__(self, ops, seed):
        super().__init__(ops, seed)
        self.calls = 0

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
        radius = self.ops.xp.sqrt(-2.0 * self.ops.xp.log(u1))
        angle = (2.0 * math.pi) * u2
        both = self.ops.concat([radius * self.ops.xp.cos(angle), radius * self.ops.xp.sin(angle)])
        return both[:count].reshape(shape)

    def integers(self, high, shape):
        wide = "float64" if self.ops.supports("float64") else "float32"  # float32: fine below 2**24
        scaled = self.ops.xp.floor(self.uniform(shape, wide) * high)
        return self.ops.astype(scaled, self.ops.index_dtype)


_BY_NAME = {"numpy": NumpyRandom, "torch": TorchRandom, "jax": JaxRandom, "cupy": CupyRandom}


def device_random(ops: ArrayOps, seed: int) -> DeviceRandom:
    """The framework's own generator where the backend is one of the four built-ins, else BackendRandom."""
    cls = _BY_NAME.get(ops.backend.name)
    if cls is None or ops.kind != ops.backend.name:
        cls = BackendRandom
    return cls(ops, seed)


def generator_name(ops: ArrayOps) -> str:
    """What made the numbers, for the metrics: "numpy PCG64", "torch Philox/MT on cuda:0" ..."""
    cls = _BY_NAME.get(ops.backend.name)
    if cls is None or ops.kind != ops.backend.name:
        return f"{ops.backend.name}.random + Box-Muller"
    return {"numpy": "numpy Generator(PCG64)", "torch": "torch.Generator", "jax": "jax.random (threefry)",
            "cupy": "cupy Generator"}[ops.backend.name]
