"""Dense matrix multiply C = A·B: the seed 000 sweep (orders 1000, 2000, 3000)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Work
from accelbench.vocabulary import ITEMSIZE
from accelbench.workloads.base import Workload
from accelbench.workloads.rotation import SEED_STRIDE, Rotation, Variant
from accelbench.workloads.verify import as_computed, host_inputs, make_check, relative_norm_error, tolerance



@lru_cache(maxsize=8)
def _reference(n: int, dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Host inputs and the float64 product of the values the device will really hold."""
    a = host_inputs((n, n), seed, dtype)
    b = host_inputs((n, n), seed + 1, dtype)
    return a, b, as_computed(a, dtype) @ as_computed(b, dtype)


class Matmul(Workload):
    name = "matmul"
    description = "dense matrix multiply C = A·B (the R/gpuR tutorial's sweep: orders 1000, 2000, 3000)"
    size_param, size_unit = "n", "matrix order"
    dtypes = ("float64", "float32", "float16", "bfloat16")
    judged_against, measures_ceiling = "matrix", True
    role = "compute-bound"

    def grid(self, sizes, dtypes, quick):
        if quick and not sizes and not dtypes:
            # the quick suite: a float32 sweep for speed-up and break-even, one size per other dtype
            return ([{"n": n, "dtype": "float32"} for n in (256, 512, 1000)]
                    + [{"n": 512, "dtype": d} for d in ("float64", "bfloat16")])
        sizes = sizes or ([256, 512, 1000] if quick else [1000, 2000, 3000])
        dtypes = dtypes or (["float32"] if quick else list(self.dtypes))
        return [{"n": n, "dtype": d} for d in dtypes for n in sizes]

    def work(self, params):
        n, itemsize = params["n"], ITEMSIZE[params["dtype"]]
        return Work(flops=2.0 * n**3, bytes_moved=3.0 * n * n * itemsize)

    def footprint_bytes(self, params):
        # two input sets in turn, and a third made fresh for the check (runner/audit.py)
        return 3 * 3 * params["n"] ** 2 * ITEMSIZE[params["dtype"]]

    def prepare(self, backend, device, params, seed):
        n, dtype = params["n"], params["dtype"]
        if dtype not in backend.dtypes(device):
            raise Unsupported(f"{backend.name} has no {dtype} on {device}")
        limit = tolerance(dtype, terms=n)

        def make(index: int) -> Variant:
            host_a, host_b, reference = _reference(n, dtype, seed + index * SEED_STRIDE)
            inputs = [_placed(backend, host_a, device, dtype), _placed(backend, host_b, device, dtype)]
            return Variant(inputs, reference, out=backend.empty((n, n), dtype, device), hosts=[host_a, host_b])

        def judge(output, variant: Variant):
            error = relative_norm_error(backend.to_host(output), variant.reference)
            return make_check(error, limit, backend.location(output), device, f"C = A·B, n={n}")

        rotation = Rotation(make, judge, typed=True)

        def to_device():
            variant = rotation.upcoming
            variant.inputs = [_placed(backend, h, device, dtype) for h in variant.hosts]
            return variant.inputs[-1]

        def to_host():
            return backend.to_host(rotation.current.last)

        shared = backend.shares_host_memory(device)
        return rotation.prepared(backend, op=lambda v: backend.matmul(v.inputs[0], v.inputs[1], out=v.out),
                                 to_device=None if shared else to_device, to_host=None if shared else to_host)


def _placed(backend, host: np.ndarray, device: str, dtype: str):
    array = backend.from_host(host, device)
    return backend.astype(array, dtype) if dtype == "bfloat16" else array
