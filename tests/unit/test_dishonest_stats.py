"""The statistics workloads follow the same rule as the core ones: the timed outputs are checked.

Each cheat replaces the function a timed call runs with one that a caching or lazy framework
would amount to: a result remembered by the identity of its inputs (copied out again, so NaN
poisoning alone cannot see it), or the first call's output handed back forever. Either must end
invalid with its reason; the honest function on the same workload stays valid.
"""
from __future__ import annotations

import numpy as np
import pytest

from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.results import Spec
from accelbench.runner.execute import TrustContext, measure_item
from accelbench.runner.plan import PlanItem
from accelbench.verdict import INVALID
from accelbench.workloads.stats import bootstrap, distance, integrate
from accelbench.timing.rigor import RIGORS

# (module, the function each timed call runs, the argument that identifies the inputs, params)
CASES = {
    "integrate": (integrate, "weighted_sum", lambda args: args[-1],
                  {"rule": "simpson", "n": 1 << 20, "dtype": "float64"}),
    "distance": (distance, "kernel_means", lambda args: id(args[1]), {"n": 2048, "d": 16, "dtype": "float64"}),
    "bootstrap": (bootstrap, "bootstrap_replicates", lambda args: (args[1], id(args[-1])),
                  {"stat": "mean", "resamples": 4000, "n": 501, "dtype": "float64"}),
}


@pytest.fixture(autouse=True)
def _fresh_references():
    """The host references are cached per input set: one made while a cheat was patched in must not
    outlive the test (the cheat replaces the function the reference is computed with, too)."""
    distance.reference_means.cache_clear()
    yield
    distance.reference_means.cache_clear()


def _copying_cache(function, key_of):
    cache = {}

    def cached(*args):
        key = key_of(args)
        if key not in cache:
            cache[key] = np.array(function(*args), copy=True)
        return np.array(cache[key], copy=True)  # a new array each time: poisoning cannot see it
    return cached


def _stale(function, key_of):
    first = []

    def stale(*args):
        if not first:
            first.append(function(*args))
        return first[0]
    return stale


def _measure(workload, params):
    backend = NumpyBackend()
    spec = Spec.make(workload, backend.name, "cpu", **params)
    with backend.threads(1):  # the thread count it records is the one it runs with
        return measure_item(PlanItem(spec, 1), backend, RIGORS["quick"], seed=11, trust=TrustContext(probe_sync=False))


@pytest.mark.parametrize("workload", list(CASES))
@pytest.mark.parametrize("cheat, reasons", [
    # a freed array's id may be reused by a new one: the cache then hands back a wrong result
    (_copying_cache, ("cache results for repeated inputs", "check failed")),
    (_stale, ("check failed",)),
])
def test_a_statistics_workload_that_caches_or_repeats_its_output_is_invalid(monkeypatch, workload, cheat, reasons):
    module, function_name, key_of, params = CASES[workload]
    monkeypatch.setattr(module, function_name, cheat(getattr(module, function_name), key_of))
    # the copying cache is caught by timing (a fresh call against a cached one) or by a recycled
    # array id's wrong result: each run misses it about 1 time in 3 on a 2-core VM, so up to 3 runs
    for _attempt in range(3):
        m = _measure(workload, params)
        if m.verdict == INVALID:
            break
    assert m.verdict == INVALID and not m.valid, m.verdict_reasons
    assert any(reason in r for r in m.verdict_reasons for reason in reasons), m.verdict_reasons


@pytest.mark.parametrize("workload", list(CASES))
def test_the_honest_statistics_workloads_pass_the_same_audit(workload):
    _, _, _, params = CASES[workload]
    m = _measure(workload, params)
    assert m.valid and m.check.passed, m.verdict_reasons
    assert m.extra.get("fresh_input_call_s", 0) > 0  # the call on never-seen inputs was timed and checked


def test_each_input_set_of_the_integral_has_its_own_exact_value():
    # a result carried over from the other input set is wrong by far more than the rule allows
    values = [integrate.exact_integral(integrate.upper_limit(k)) for k in range(3)]
    allowance = integrate.truncation_bound("trapezoid", 10**6) + integrate.rounding_allowance("float32", 10**6)
    assert min(abs(a - b) for a, b in zip(values, values[1:])) > 100 * allowance


def test_the_opencl_kernels_keep_each_input_set_in_its_own_buffers():
    from accelbench.backends.registry import get_backend

    backend = get_backend("pyopencl")
    if "opencl:0:0" not in backend.device_ids():
        pytest.skip("no OpenCL device opencl:0:0 (PoCL)")
    prepared = distance.Distance().prepare(backend, "opencl:0:0", {"n": 256, "d": 16, "dtype": "float32"}, 3)
    first, second = prepared.compute(), prepared.compute()
    assert first is not second  # one set's call does not overwrite the other's output
    assert prepared.called_and_checked(lambda: backend.synchronize("opencl:0:0")).passed
    prepared.poison()
    assert np.isnan(backend.to_host(first)).all() and np.isnan(backend.to_host(second)).all()
    prepared.release()


def test_a_plugin_workload_checked_only_on_a_call_of_its_own_is_unverified():
    """A third party's `verify` re-runs the work apart from the timed calls: it proves the code
    right, not the timed outputs, and the result says so instead of passing as valid."""
    from accelbench.results import Check, Work
    from accelbench.workloads.base import Prepared, Workload
    from accelbench.workloads.registry import register_workload, unregister_workload

    class SeparateCheck(Workload):
        name, dtypes = "separate-check", ("float64",)

        def grid(self, sizes, dtypes, quick):
            return [{"n": 1000, "dtype": "float64"}]

        def work(self, params):
            return Work(flops=1000.0, bytes_moved=8000.0)

        def footprint_bytes(self, params):
            return 8000

        def prepare(self, backend, device, params, seed):
            data = np.ones(params["n"])
            return Prepared(compute=lambda: data * 2.0,
                            verify=lambda: Check(bool(np.all(data * 2.0 == 2.0)), 0.0, 1e-12, "twice one", "cpu"))

    register_workload(SeparateCheck())
    try:
        m = _measure("separate-check", {"n": 1000, "dtype": "float64"})
    finally:
        unregister_workload("separate-check")
    assert m.valid and m.verdict == "unverified" or m.verdict == "noisy", m.verdict_reasons
    assert any("not on the outputs of the timed calls" in r for r in m.verdict_reasons)
