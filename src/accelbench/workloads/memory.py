"""Memory-bound workloads: STREAM (copy, scale, add, triad), a reduction and a fused elementwise op.

Bytes are counted as read + write of each array once (STREAM's convention), so GB/s compare with
the memory bandwidth ceiling; an unfused implementation that makes extra passes shows as a lower rate.
"""
from __future__ import annotations

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Work
from accelbench.workloads.base import Prepared, Workload
from accelbench.workloads.verify import NUMPY_DTYPE, host_inputs, make_check, relative_norm_error, tolerance

ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2}
SCALAR = 3.0
# kernel -> (arrays read, arrays written, flops per element)
STREAM_KERNELS = {"copy": (1, 1, 0), "scale": (1, 1, 1), "add": (2, 1, 1), "triad": (2, 1, 2)}
DEFAULT_ELEMENTS = 2**24   # 128 MiB per float64 array: well above any last-level cache
QUICK_ELEMENTS = 2**23     # 64 MiB per float64 array, still twice a 32 MiB L3
QUICK_ELEMENTS_FLOAT32 = 2**24  # the same 64 MiB for the float32 reduce and elementwise


class _ArrayWorkload(Workload):
    dtypes = ("float64", "float32")
    size_unit = "elements"

    def _inputs(self, backend, device, params, seed, count):
        dtype = params["dtype"]
        if dtype not in backend.dtypes(device) or dtype not in NUMPY_DTYPE:
            raise Unsupported(f"{backend.name} has no {dtype} on {device}")
        hosts = [host_inputs((params["n"],), seed + i, dtype) for i in range(count)]
        return hosts, [backend.from_host(h, device) for h in hosts]

    def footprint_bytes(self, params):
        return 3 * params["n"] * ITEMSIZE[params["dtype"]]

    def _prepared(self, backend, device, compute, reference, out, hosts, arrays, limit, what):
        def verify():
            result = compute()
            backend.synchronize(device)
            error = relative_norm_error(np.atleast_1d(backend.to_host(result)), np.atleast_1d(reference))
            return make_check(error, limit, backend.location(result), device, what)

        def to_device():
            for index, host in enumerate(hosts):
                arrays[index] = backend.from_host(host, device)
            return arrays[-1]

        shared = backend.shares_host_memory(device)
        return Prepared(compute=compute, verify=verify, to_device=None if shared else to_device,
                        to_host=None if shared else (lambda: backend.to_host(out)))


class Stream(_ArrayWorkload):
    name = "stream"
    description = "STREAM copy, scale, add, triad over arrays well above the last-level cache"

    def grid(self, sizes, dtypes, quick):
        sizes = sizes or [QUICK_ELEMENTS if quick else DEFAULT_ELEMENTS]
        kernels = ("copy", "triad") if quick else tuple(STREAM_KERNELS)
        return [{"kernel": k, "n": n, "dtype": d}
                for d in (dtypes or ["float64"]) for n in sizes for k in kernels]

    def work(self, params):
        reads, writes, flops = STREAM_KERNELS[params["kernel"]]
        n = params["n"]
        return Work(flops=float(flops * n), bytes_moved=float((reads + writes) * n * ITEMSIZE[params["dtype"]]))

    def prepare(self, backend, device, params, seed):
        kernel = params["kernel"]
        hosts, arrays = self._inputs(backend, device, params, seed, 2)
        out = backend.empty((params["n"],), params["dtype"], device)
        a, b = (h.astype(np.float64) for h in hosts)
        calls = {
            "copy": (lambda: backend.copy(arrays[0], out), a),
            "scale": (lambda: backend.scale(arrays[0], SCALAR, out), SCALAR * a),
            "add": (lambda: backend.add(arrays[0], arrays[1], out), a + b),
            "triad": (lambda: backend.triad(arrays[0], arrays[1], SCALAR, out), a + SCALAR * b),
        }
        compute, reference = calls[kernel]
        return self._prepared(backend, device, compute, reference, out, hosts, arrays,
                              tolerance(params["dtype"]), f"stream {kernel}")


class Reduce(_ArrayWorkload):
    name = "reduce"
    description = "sum of all elements: memory-bound reduction"

    def grid(self, sizes, dtypes, quick):
        return [{"n": n, "dtype": d} for d in (dtypes or ["float32"])
                for n in (sizes or [QUICK_ELEMENTS_FLOAT32 if quick else 2 * DEFAULT_ELEMENTS])]

    def work(self, params):
        return Work(flops=float(params["n"]), bytes_moved=float(params["n"] * ITEMSIZE[params["dtype"]]))

    def prepare(self, backend, device, params, seed):
        hosts, arrays = self._inputs(backend, device, params, seed, 1)
        values = hosts[0].astype(np.float64)
        # the sum of n uniform(-1,1) values is near 0: measure the error against sum(|x|) instead
        reference = values.sum()
        scale = float(np.abs(values).sum()) / max(abs(reference), 1e-300)
        compute = lambda: backend.total(arrays[0])  # noqa: E731
        return self._prepared(backend, device, compute, reference, arrays[0], hosts, arrays,
                              tolerance(params["dtype"]) * scale, "sum")


class Elementwise(_ArrayWorkload):
    name = "elementwise"
    description = "out = a·a + a: two flops per element read once and written once"

    def grid(self, sizes, dtypes, quick):
        return [{"n": n, "dtype": d} for d in (dtypes or ["float32"])
                for n in (sizes or [QUICK_ELEMENTS_FLOAT32 if quick else 2 * DEFAULT_ELEMENTS])]

    def work(self, params):
        n = params["n"]
        return Work(flops=2.0 * n, bytes_moved=2.0 * n * ITEMSIZE[params["dtype"]])

    def prepare(self, backend, device, params, seed):
        hosts, arrays = self._inputs(backend, device, params, seed, 1)
        out = backend.empty((params["n"],), params["dtype"], device)
        a = hosts[0].astype(np.float64)
        compute = lambda: backend.elementwise(arrays[0], out)  # noqa: E731
        return self._prepared(backend, device, compute, a * a + a, out, hosts, arrays,
                              tolerance(params["dtype"]), "a·a + a")
