"""A user's own function as a workload: same preparation, timing, verification and store as the built-ins.

The function receives its inputs as arrays on the device (numpy, torch tensors, ...), so code
written with operators (`a @ b`, `x.sum()`) runs unchanged on every backend with a namespace.
It is checked against `reference` (a function run by numpy in float64 on the host) when one is
given; without one the result is `unverified`: a function cannot be its own proof.
The timed calls take two input sets in turn (the given values, then the same values scaled by
1 + 2⁻⁶), so the reference must accept any inputs of those shapes.
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from accelbench.errors import Unsupported, UsageError
from accelbench.results import Check, Work
from accelbench.workloads.base import Workload
from accelbench.workloads.rotation import Rotation, Variant
from accelbench.vocabulary import ITEMSIZE
from accelbench.workloads.verify import make_check, relative_norm_error, tolerance

PERTURBATION = 2.0 ** -6  # variant k: float inputs scaled by 1 + k·2⁻⁶ (exact in binary)
UNVERIFIED = "unverified: no reference given (pass reference= to check the outputs)"


def dtype_of(arrays: Sequence[np.ndarray]) -> str:
    """The float dtype the inputs are in (the widest), float64 where none is a float."""
    floats = [a.dtype for a in arrays if a.dtype.kind == "f"]
    if not floats:
        return "float64"
    name = np.result_type(*floats).name
    return name if name in ITEMSIZE else "float64"


class FunctionWorkload(Workload):
    size_param = "inputs"
    size_unit = "arrays"

    def __init__(self, fn: Callable, inputs: Sequence[np.ndarray], *, name: str | None = None,
                 reference: Callable | None = None, rel_tolerance: float | None = None,
                 flops: float = 0.0, bytes_moved: float | None = None, dtypes: Sequence[str] | None = None):
        if not callable(fn):
            raise UsageError(f"bench: {fn!r} is not callable")
        arrays = [np.asarray(x) for x in inputs]
        if not arrays or any(a.dtype.kind not in "fiu" for a in arrays):
            raise UsageError("bench: inputs must be one or more numeric arrays (numpy or convertible)")
        self.fn, self.inputs, self.reference = fn, arrays, reference
        self.name = name or str(getattr(fn, "__name__", "function"))
        self.description = (fn.__doc__ or f"user function {self.name}").strip().splitlines()[0]
        self.rel_tolerance, self.flops = rel_tolerance, float(flops)
        self.bytes_moved = None if bytes_moved is None else float(bytes_moved)
        self.dtypes = tuple(dtypes) if dtypes else (dtype_of(arrays),)
        unknown = [d for d in self.dtypes if d not in ITEMSIZE]
        if unknown:
            raise UsageError(f"bench: dtype {', '.join(map(repr, unknown))}; accepted: {', '.join(ITEMSIZE)}")

    def grid(self, sizes, dtypes, quick):
        return [{"dtype": d} for d in (dtypes or self.dtypes)]

    def work(self, params):
        if self.bytes_moved is not None:
            return Work(self.flops, self.bytes_moved)
        itemsize = ITEMSIZE[params["dtype"]]
        moved = sum(a.size * itemsize if a.dtype.kind == "f" else a.nbytes for a in self.inputs)
        return Work(self.flops, float(moved))

    def footprint_bytes(self, params):
        return int(sum(a.nbytes for a in self.inputs) * 4)

    def _variant_hosts(self, index: int, dtype: str) -> list[np.ndarray]:
        factor = 1.0 + index * PERTURBATION
        return [(a * factor).astype(dtype if dtype != "bfloat16" else np.float32) if a.dtype.kind == "f" else a
                for a in self.inputs]

    def prepare(self, backend, device, params, seed):
        dtype = params["dtype"]
        if dtype not in backend.dtypes(device):
            raise Unsupported(f"{backend.name} has no {dtype} on {device}")
        if backend.namespace(device) is None:
            raise Unsupported(f"{backend.name} arrays support no array operators, so a Python function cannot run "
                              f"on {device}; user functions run on numpy, torch, jax or cupy devices")
        limit = self.rel_tolerance if self.rel_tolerance is not None else tolerance(dtype, 10)

        def make(index: int) -> Variant:
            hosts = self._variant_hosts(index, dtype)
            arrays = [backend.from_host(h, device) for h in hosts]
            if dtype == "bfloat16":
                arrays = [backend.astype(a, dtype) if h.dtype.kind == "f" else a for a, h in zip(arrays, hosts)]
            expected = (np.asarray(self.reference(*[h.astype(np.float64) if h.dtype.kind == "f" else h for h in hosts]),
                                   dtype=np.float64) if self.reference else np.empty(0))
            return Variant(arrays, expected, hosts=hosts)

        def judge(output, variant: Variant) -> Check:
            if self.reference is None:
                return Check(True, float("nan"), limit, UNVERIFIED, backend.location(output))
            error = relative_norm_error(np.atleast_1d(backend.to_host(output)), np.atleast_1d(variant.reference))
            return make_check(error, limit, backend.location(output), device, f"{self.name} vs float64 reference")

        rotation = Rotation(make, judge)

        def to_device():
            variant = rotation.upcoming
            variant.inputs = [backend.from_host(h, device) for h in variant.hosts]
            return variant.inputs[-1]

        shared = backend.shares_host_memory(device)
        return rotation.prepared(backend, op=lambda v: self.fn(*v.inputs), to_device=None if shared else to_device,
                                 unverified=None if self.reference else UNVERIFIED)
