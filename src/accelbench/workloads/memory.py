"""Memory-bound workloads: STREAM (copy, scale, add, triad), a reduction and a fused elementwise op.

Bytes are counted as read + write of each array once (STREAM's convention), so GB/s compare with
the memory bandwidth ceiling; an unfused implementation that makes extra passes shows as a lower rate.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Work
from accelbench.vocabulary import ITEMSIZE
from accelbench.workloads import host_side
from accelbench.workloads.base import Workload
from accelbench.workloads.rotation import SEED_STRIDE, Rotation, Variant
from accelbench.workloads.sampled_check import Expectation
from accelbench.workloads.verify import NUMPY_DTYPE, host_inputs, tolerance

SCALAR = 3.0
WHOLE_UP_TO = 1 << 16  # elementwise expected values cost little: outputs this small are judged whole
# kernel -> (arrays read, arrays written, flops per element)
STREAM_KERNELS = {"copy": (1, 1, 0), "scale": (1, 1, 1), "add": (2, 1, 1), "triad": (2, 1, 2)}
DEFAULT_ELEMENTS = 2**24   # 128 MiB per float64 array: well above any last-level cache
# 56 MiB per float64 array, 1.75x a 32 MiB L3: the paired STREAM rounds hold 16 such arrays (two
# instances of two input sets and outputs, and the shared host inputs); at 64 MiB the quick suite
# peaked at 1,473 MiB resident, over its 1.5 GB goal (issue 42)
QUICK_ELEMENTS = 7 * 2**20
QUICK_ELEMENTS_FLOAT32 = 2**24  # the same 64 MiB for the float32 reduce and elementwise


class _ArrayWorkload(Workload):
    dtypes = ("float64", "float32")
    size_unit = "elements"
    judged_against = "memory_bandwidth"
    role = "memory-bound"
    #: input arrays per call
    inputs = 1

    def inputs_for(self, params) -> int:
        """Input arrays one call reads (and to_device uploads)."""
        return self.inputs

    def cannot_run(self, backend, device, params):
        dtype = params["dtype"]
        if dtype not in backend.dtypes(device) or dtype not in NUMPY_DTYPE:
            return f"{backend.name} has no {dtype} on {device}"
        return None

    def footprint_bytes(self, params):
        # two input sets in turn, and a third made fresh for the check (runner/audit.py)
        return 3 * (self.inputs_for(params) + 1) * params["n"] * ITEMSIZE[params["dtype"]]

    def _prepared(self, backend, device, params, seed, op, expected, limit, what, with_out=True, summed=False):
        """`op(variant)` is the timed call; `expected(*host inputs in float64)` its float64 value,
        elementwise (`summed`: the sum of that over the inputs, held once per input set). The
        host inputs are shared with any other instance of the problem still holding them
        (workloads/host_side.py: the paired rounds prepare the baseline and a device together)."""
        dtype, n = params["dtype"], params["n"]
        if (why := self.cannot_run(backend, device, params)) is not None:
            raise Unsupported(why)

        def make(index: int) -> Variant:
            seeds = [seed + index * SEED_STRIDE + i for i in range(self.inputs_for(params))]
            hosts = [host_side.shared(("host", n, dtype, s), partial(host_inputs, (n,), s, dtype)) for s in seeds]
            out = backend.empty((n,), dtype, device) if with_out else None
            total = (host_side.shared((self.name, what, n, dtype, tuple(seeds)),
                                      lambda: np.atleast_1d(host_side.sum_float64(hosts[0]))) if summed else None)
            return Variant([backend.from_host(h, device) for h in hosts], total, out=out, hosts=hosts)

        def at(variant: Variant, flat: np.ndarray) -> np.ndarray:
            if summed:
                return np.atleast_1d(sum_now(variant))
            return expected(*(variant.values(i, flat) for i in range(len(variant.bases))))

        expect = Expectation(at, size=lambda v: 1 if summed else n, limit=limit, what=what, whole_up_to=WHOLE_UP_TO,
                             affected=(lambda v, draw: np.zeros(1, dtype=np.int64)) if summed else None)
        rotation = Rotation(make, typed=True, expect=expect, device=device)

        def to_device():
            variant = rotation.upcoming
            variant.flip_log = []  # the first values again
            return variant.upload(lambda h: backend.from_host(h, device))

        shared = backend.shares_host_memory(device)
        return rotation.prepared(backend, op=op, to_device=None if shared else to_device,
                                 to_host=None if shared else (lambda: backend.to_host(rotation.current.last)))


def sum_now(variant: Variant) -> float:
    """The float64 sum of the values the first input holds now: the first values' sum, less
    twice each value whose sign is flipped since."""
    flipped = variant.flipped(0)
    change = 2.0 * float(np.sum(np.asarray(variant.bases[0][flipped], dtype=np.float64)))
    return float(variant.reference[0]) - change


class Stream(_ArrayWorkload):
    name = "stream"
    description = "STREAM copy, scale, add, triad over arrays well above the last-level cache"
    # 2: copy and scale upload only the array they read (version 1 uploaded two for every kernel, so
    # their to_device time, end-to-end time and transfer share were those of two arrays)
    version = "2"
    measures_ceiling = True

    def inputs_for(self, params) -> int:
        return STREAM_KERNELS[params["kernel"]][0]

    def grid(self, sizes, dtypes, quick):
        sizes = sizes or [QUICK_ELEMENTS if quick else DEFAULT_ELEMENTS]
        kernels = ("triad",) if quick else tuple(STREAM_KERNELS)  # quick: the kernel the answer reads
        return [{"kernel": k, "n": n, "dtype": d}
                for d in (dtypes or ["float64"]) for n in sizes for k in kernels]

    def work(self, params):
        reads, writes, flops = STREAM_KERNELS[params["kernel"]]
        n = params["n"]
        return Work(flops=float(flops * n), bytes_moved=float((reads + writes) * n * ITEMSIZE[params["dtype"]]))

    def prepare(self, backend, device, params, seed):
        kernel = params["kernel"]
        calls = {
            "copy": (lambda v: backend.copy(v.inputs[0], v.out), lambda a: a),
            "scale": (lambda v: backend.scale(v.inputs[0], SCALAR, v.out), lambda a: SCALAR * a),
            "add": (lambda v: backend.add(v.inputs[0], v.inputs[1], v.out), lambda a, b: a + b),
            "triad": (lambda v: backend.triad(v.inputs[0], v.inputs[1], SCALAR, v.out), lambda a, b: a + SCALAR * b),
        }
        op, expected = calls[kernel]
        limit = tolerance(params["dtype"], terms=1)
        return self._prepared(backend, device, params, seed, op, expected, lambda v: limit, f"stream {kernel}")


class Reduce(_ArrayWorkload):
    name = "reduce"
    description = "sum of all elements: memory-bound reduction"

    def grid(self, sizes, dtypes, quick):
        return [{"n": n, "dtype": d} for d in (dtypes or ["float32"])
                for n in (sizes or [QUICK_ELEMENTS_FLOAT32 if quick else 2 * DEFAULT_ELEMENTS])]

    def work(self, params):
        return Work(flops=float(params["n"]), bytes_moved=float(params["n"] * ITEMSIZE[params["dtype"]]))

    def prepare(self, backend, device, params, seed):
        # against sum(|x|), a sum of random-sign values errs by its depth (log2 n), not its length
        limit = tolerance(params["dtype"], terms=int(params["n"]).bit_length())

        magnitudes: dict[int, float] = {}

        def scaled_limit(variant):
            # the sum of n uniform(-1,1) values is near 0: judge the error against sum(|x|) instead,
            # relative to the sum the inputs hold now (sign flips leave sum(|x|) as it was but move
            # the sum: judged against the first values' sum, an honest float32 sum was refused)
            if variant.key not in magnitudes:
                magnitudes[variant.key] = host_side.sum_float64(variant.hosts[0], absolute=True)
            return limit * magnitudes[variant.key] / max(abs(sum_now(variant)), 1e-300)

        return self._prepared(backend, device, params, seed, lambda v: backend.total(v.inputs[0]), None,
                              scaled_limit, "sum", with_out=False, summed=True)


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
        limit = tolerance(params["dtype"], terms=1)
        return self._prepared(backend, device, params, seed, lambda v: backend.elementwise(v.inputs[0], v.out),
                              lambda a: a * a + a, lambda v: limit, "a·a + a")
