"""Random numbers made on the device, by each framework's own generator, from a recorded seed.

The generator is the backend's (`ArrayNamespace.random`, backends/arrays.py): numpy's PCG64,
torch.Generator on the device, a jax threefry key split per call, cupy's Generator; any other
backend gets its uniforms from its own `backend.random()` (on its device) and its normals by
Box–Muller. Nothing is drawn on the host and copied over, so the time of drawing is part of what
an accelerator is measured on. The OpenCL kernels draw in-kernel from a counter-based stream
instead (stats/opencl_kernels.py).
"""
from __future__ import annotations

from accelbench.backends.arrays import BackendRandom, DeviceRandom, NumpyRandom
from accelbench.workloads.stats.arrays import ArrayOps

__all__ = ["BackendRandom", "DeviceRandom", "NumpyRandom", "device_random", "generator_name"]


def device_random(ops: ArrayOps, seed: int) -> DeviceRandom:
    """The backend's own generator on the device, seeded."""
    return ops.random(seed)


def generator_name(ops: ArrayOps) -> str:
    """What made the numbers, for the metrics: "numpy Generator(PCG64)", "torch.Generator" ..."""
    return ops.generator_name
