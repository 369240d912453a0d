"""Dense matrix multiply C = A·B: the seed 000 sweep (orders 1000, 2000, 3000)."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Work
from accelbench.vocabulary import ITEMSIZE
from accelbench.workloads.base import Workload
from accelbench.workloads.rotation import SEED_STRIDE, Rotation, Variant
from accelbench.workloads import sampled_check
from accelbench.workloads.sampled_check import Expectation
from accelbench.workloads.verify import as_computed, host_inputs, tolerance



@lru_cache(maxsize=8)
def _host_inputs(n: int, dtype: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Host inputs (never written: the device gets copies, and changes its own)."""
    return host_inputs((n, n), seed, dtype), host_inputs((n, n), seed + 1, dtype)


def expected_entries(variant, dtype: str, flat: np.ndarray) -> np.ndarray:
    """float64 entries of A·B at flat positions, from the values the device holds (the host inputs
    as the dtype stores them, with the signs the changes flipped): one dot product each, so judging a
    few hundred entries costs nothing beside the product."""
    a, b = variant.bases
    n = a.shape[1]
    rows, cols = np.divmod(np.asarray(flat, dtype=np.int64), n)
    left, right = as_computed(a[rows], dtype), as_computed(b[:, cols], dtype)
    # A's entry (row, k) sits at row·n + k, B's (k, col) at k·n + col
    _negate(left, rows, *np.divmod(variant.flipped(0), n))
    _negate(right.T, cols, *reversed(np.divmod(variant.flipped(1), n)))
    return np.einsum("ij,ji->i", left, right)


def _negate(values: np.ndarray, lines: np.ndarray, flipped_lines: np.ndarray, flipped_at: np.ndarray) -> None:
    """values[p, k] *= -1 wherever (lines[p], k) is a flipped entry: each judged line, the entries
    of it the changes flipped (vectorised: a judged line may repeat, a flipped entry is unique)."""
    if not flipped_lines.size:
        return
    order = np.argsort(lines, kind="stable")
    ordered = lines[order]
    start, stop = np.searchsorted(ordered, flipped_lines, "left"), np.searchsorted(ordered, flipped_lines, "right")
    counts = stop - start
    if not counts.any():
        return
    at = np.repeat(flipped_at, counts)
    offsets = np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)  # 0, 1, ... in each range
    values[order[np.repeat(start, counts) + offsets], at] *= -1


def affected_entries(variant, draw) -> np.ndarray:
    """The entries of C the inputs' last changes feed: a drawn entry of each changed row of A, and of
    each changed column of B."""
    a = variant.bases[0]
    n = a.shape[1]
    found = []
    changed = getattr(variant, "changed", [])
    if changed and len(changed[0]):
        rows = np.asarray(changed[0], dtype=np.int64) // n
        found.append(rows * n + sampled_check.PRIVATE.integers(0, n, rows.size))
    if len(changed) > 1 and len(changed[1]):
        cols = np.asarray(changed[1], dtype=np.int64) % n
        found.append(sampled_check.PRIVATE.integers(0, n, cols.size) * n + cols)
    return np.unique(np.concatenate(found)) if found else np.empty(0, dtype=np.int64)


class Matmul(Workload):
    name = "matmul"
    description = "dense matrix multiply C = A·B (the R/gpuR tutorial's sweep: orders 1000, 2000, 3000)"
    size_param, size_unit = "n", "matrix order"
    dtypes = ("float64", "float32", "float16", "bfloat16")
    judged_against, measures_ceiling = "matrix", True
    role = "compute-bound"

    def grid(self, sizes, dtypes, quick):
        if quick and not sizes and not dtypes:
            # the quick suite: a float32 sweep for speed-up and break-even (other dtypes: --dtype)
            return [{"n": n, "dtype": "float32"} for n in (256, 512, 1000)]
        sizes = sizes or ([256, 512, 1000] if quick else [1000, 2000, 3000])
        dtypes = dtypes or (["float32"] if quick else list(self.dtypes))
        return [{"n": n, "dtype": d} for d in dtypes for n in sizes]

    def work(self, params):
        n, itemsize = params["n"], ITEMSIZE[params["dtype"]]
        return Work(flops=2.0 * n**3, bytes_moved=3.0 * n * n * itemsize)

    def footprint_bytes(self, params):
        # two input sets in turn, and a third made fresh for the check (runner/audit.py)
        return 3 * 3 * params["n"] ** 2 * ITEMSIZE[params["dtype"]]

    def cannot_run(self, backend, device, params):
        dtype = params["dtype"]
        return None if dtype in backend.dtypes(device) else f"{backend.name} has no {dtype} on {device}"

    def prepare(self, backend, device, params, seed):
        n, dtype = params["n"], params["dtype"]
        if (why := self.cannot_run(backend, device, params)) is not None:
            raise Unsupported(why)
        limit = tolerance(dtype, terms=n)

        def make(index: int) -> Variant:
            host_a, host_b = _host_inputs(n, dtype, seed + index * SEED_STRIDE)
            inputs = [_placed(backend, host_a, device, dtype), _placed(backend, host_b, device, dtype)]
            return Variant(inputs, None, out=backend.empty((n, n), dtype, device), hosts=[host_a, host_b])

        expect = Expectation(lambda v, flat: expected_entries(v, dtype, flat), size=lambda v: n * n,
                             limit=lambda v: limit, what=f"C = A·B, n={n}", affected=affected_entries)
        rotation = Rotation(make, typed=True, expect=expect, device=device,
                            upload=lambda values: _placed(backend, values, device, dtype))

        def to_device():
            variant = rotation.upcoming
            variant.flip_log = []  # the first values again
            return variant.upload(lambda h: _placed(backend, h, device, dtype))

        def to_host():
            return backend.to_host(rotation.current.last)

        shared = backend.shares_host_memory(device)
        return rotation.prepared(backend, op=lambda v: backend.matmul(v.inputs[0], v.inputs[1], out=v.out),
                                 to_device=None if shared else to_device, to_host=None if shared else to_host)


def _placed(backend, host: np.ndarray, device: str, dtype: str):
    array = backend.from_host(host, device)
    return backend.astype(array, dtype) if dtype == "bfloat16" else array
