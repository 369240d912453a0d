"""A user's own function as a workload: same preparation, timing, verification and store as the built-ins.

The function receives its inputs as arrays on the device (numpy, torch tensors, ...), so code
written with operators (`a @ b`, `x.sum()`) runs unchanged on every backend with a namespace.
Its reference is the same function run by numpy in float64 on the host, unless one is given.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from accelbench.errors import Unsupported, UsageError
from accelbench.results import Work
from accelbench.workloads.base import Prepared, Workload
from accelbench.workloads.verify import make_check, relative_norm_error, tolerance


class FunctionWorkload(Workload):
    size_param = "inputs"
    size_unit = "arrays"

    def __init__(self, fn: Callable, inputs: Sequence[np.ndarray], *, name: str | None = None,
                 reference: Callable | None = None, rel_tolerance: float | None = None,
                 flops: float = 0.0, bytes_moved: float | None = None, dtypes: Sequence[str] = ("float32",)):
        if not callable(fn):
            raise UsageError(f"bench: {fn!r} is not callable")
        arrays = [np.asarray(x) for x in inputs]
        if not arrays or any(a.dtype.kind not in "fiu" for a in arrays):
            raise UsageError("bench: inputs must be one or more numeric arrays (numpy or convertible)")
        self.fn, self.inputs, self.reference = fn, arrays, reference
        self.name = name or getattr(fn, "__name__", "function")
        self.description = (fn.__doc__ or f"user function {self.name}").strip().splitlines()[0]
        self.rel_tolerance, self.flops = rel_tolerance, float(flops)
        self.bytes_moved = float(sum(a.size for a in arrays) * 8) if bytes_moved is None else float(bytes_moved)
        self.dtypes = tuple(dtypes)

    def grid(self, sizes, dtypes, quick):
        return [{"dtype": d} for d in (dtypes or self.dtypes)]

    def work(self, params):
        return Work(self.flops, self.bytes_moved)

    def footprint_bytes(self, params):
        return int(sum(a.nbytes for a in self.inputs) * 2)

    def _expected(self) -> np.ndarray:
        reference = self.reference or self.fn
        return np.asarray(reference(*[a.astype(np.float64) for a in self.inputs]), dtype=np.float64)

    def prepare(self, backend, device, params, seed):
        dtype = params["dtype"]
        if dtype not in backend.dtypes(device):
            raise Unsupported(f"{backend.name} has no {dtype} on {device}")
        hosts = [a.astype(dtype) if a.dtype.kind == "f" and dtype != "bfloat16" else a for a in self.inputs]
        arrays = [backend.from_host(h, device) for h in hosts]
        if dtype == "bfloat16":
            arrays = [backend.astype(a, dtype) for a in arrays]
        expected = self._expected()
        limit = self.rel_tolerance if self.rel_tolerance is not None else tolerance(dtype, 10)

        def compute() -> Any:
            return self.fn(*arrays)

        def verify():
            out = compute()
            backend.synchronize(device)
            error = relative_norm_error(np.atleast_1d(backend.to_host(out)), np.atleast_1d(expected))
            return make_check(error, limit, backend.location(out), device, f"{self.name} vs float64 reference")

        def to_device():
            for index, host in enumerate(hosts):
                arrays[index] = backend.from_host(host, device)
            return arrays[-1]

        shared = backend.shares_host_memory(device)
        return Prepared(compute=compute, verify=verify, to_device=None if shared else to_device)
