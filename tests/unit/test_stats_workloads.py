"""The statistics workloads (issue #6): each passes its check on every backend it runs on, and fails
when what it computes is wrong — a biased generator, a wrong rule, the wrong resamples, a sampler
aimed at the wrong target, a result on the wrong device. Sizes are small: the checks are in standard
errors, so they stay meaningful at any size; timing is asserted only as a ratio measured in one
process, with a wide margin (the machine is shared)."""
from __future__ import annotations

import math
import subprocess
import sys
import time

import numpy as np
import pytest

from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.backends.registry import get_backend
from accelbench.errors import Unsupported
from accelbench.workloads.registry import get_workload
from accelbench.workloads.stats import bootstrap, integrate, mcmc, montecarlo, simstudy
from accelbench.workloads.stats.arrays import ArrayOps, array_ops
from accelbench.workloads.stats.rng import NumpyRandom, device_random

SEED = 20261202
SMALL = {
    "montecarlo": [{"n": 1 << 16}],
    "bootstrap": [{"stat": s, "resamples": 400, "n": 501} for s in bootstrap.STATISTICS],
    "integrate": [{"rule": r, "n": 1 << 16} for r in integrate.RULES],
    "simstudy": [{"replicates": 1000, "group_size": 20}],
    "distance": [{"n": 300, "d": 16}],
    "mcmc": [{"variant": "sequential", "chains": 1, "steps": 4000}, {"variant": "chains", "chains": 512, "steps": 200}],
}
CASES = [(name, {**params, "dtype": dtype}) for name, grid in SMALL.items() for params in grid
         for dtype in ("float64", "float32")]


def _has_kernel(case) -> bool:
    """Every workload has an OpenCL kernel, except the bootstrap median (a skip in a run)."""
    return case[1].get("stat") != "median"


def _ids(case):
    name, params = case
    return name + "-" + "-".join(str(v) for k, v in sorted(params.items()) if k in ("stat", "rule", "variant", "dtype"))


def _backend_device(name: str):
    if name == "torch":
        pytest.importorskip("torch")
    if name == "jax":
        pytest.importorskip("jax")
    backend = get_backend(name)
    if not backend.availability().ok:
        pytest.skip(f"{name}: {backend.availability().reason}")
    return backend, ("opencl:0:0" if name == "pyopencl" else "cpu")


def _checked(backend, device, name, params, seed=SEED):
    prepared = get_workload(name).prepare(backend, device, params, seed)
    return prepared.called_and_checked(lambda: backend.synchronize(device)), prepared.metrics()


TARGETS = [(target, case) for target in ("numpy-1", "numpy-all", "torch", "pyopencl") for case in CASES
           if target != "pyopencl" or _has_kernel(case)]


@pytest.mark.parametrize("target, case", TARGETS, ids=[f"{t}-{_ids(c)}" for t, c in TARGETS])
def test_each_workload_passes_its_check(target, case):
    name, params = case
    backend_name, _, threads = target.partition("-")
    backend, device = _backend_device(backend_name)
    with backend.threads(1 if threads == "1" else None):
        check, metrics = _checked(backend, device, name, params)
    assert check.passed, check.detail
    assert check.device_seen == device
    assert metrics["items_per_call"] > 0 and metrics["item_unit"] and metrics["seed"] in (SEED, SEED + 1)


@pytest.mark.parametrize("name", ["montecarlo", "simstudy", "distance", "integrate", "mcmc"])
def test_jax_namespace(name):
    backend, device = _backend_device("jax")
    check, _ = _checked(backend, device, name, {**SMALL[name][0], "dtype": "float32"})
    assert check.passed, check.detail


def test_pyopencl_refuses_the_bootstrap_median():
    backend, device = _backend_device("pyopencl")
    with pytest.raises(Unsupported, match="not the median"):
        get_workload("bootstrap").prepare(backend, device, {"stat": "median", "resamples": 400, "n": 501,
                                                            "dtype": "float32"}, SEED)


# -- a biased generator is caught ----------------------------------------------------------------
def test_shifted_normal_draws_fail_the_montecarlo_check(monkeypatch):
    honest = NumpyRandom.normal
    monkeypatch.setattr(NumpyRandom, "normal", lambda self, shape, dtype: honest(self, shape, dtype) + 0.05)
    check, metrics = _checked(NumpyBackend(), "cpu", "montecarlo", {"n": 1 << 16, "dtype": "float64"})
    assert not check.passed and "FAILED price" in check.detail
    assert metrics["error_in_standard_errors"] > 4.5


class _SkewedNumpy(NumpyBackend):
    """A numpy backend under another name whose namespace has no generator of its own, so its draws
    come through BackendRandom from its own `random()`; skewed=True squares its uniforms
    (u -> u² on [0, 1)), which no longer are uniform."""

    def __init__(self, name: str, skewed: bool):
        self.name, self.skewed = name, skewed

    def arrays(self, device):
        return ArrayOps(self, device)  # the plain namespace: BackendRandom over random()

    def random(self, shape, dtype, device, seed):
        values = super().random(shape, dtype, device, seed)
        return (values + 1) ** 2 / 2 - 1 if self.skewed else values


@pytest.mark.parametrize("name, params", [("montecarlo", {"n": 1 << 16}),
                                          ("simstudy", {"replicates": 1000, "group_size": 20})])
def test_a_backend_whose_draws_are_biased_is_flagged(name, params):
    check, _ = _checked(_SkewedNumpy("skewed", skewed=True), "cpu", name, {**params, "dtype": "float64"})
    assert not check.passed, check.detail
    check, _ = _checked(_SkewedNumpy("fair", skewed=False), "cpu", name, {**params, "dtype": "float64"})
    assert check.passed, check.detail  # the same path with fair uniforms passes: the skew is what fails


# -- other wrong computations are caught ----------------------------------------------------------
def test_a_wrong_integrand_fails(monkeypatch):
    monkeypatch.setattr(integrate, "density", lambda xp, x: xp.exp(-0.5 * x * x) * (1 + 1e-7))
    check, _ = _checked(NumpyBackend(), "cpu", "integrate", {"rule": "simpson", "n": 1 << 16, "dtype": "float64"})
    assert not check.passed and "FAILED integral" in check.detail


def test_resamples_other_than_the_references_fail(monkeypatch):
    monkeypatch.setattr(ArrayOps, "take", lambda self, values, indices: values[(indices + 1) % values.shape[0]])
    params = {"stat": "mean", "resamples": 400, "n": 501, "dtype": "float64"}
    check, _ = _checked(NumpyBackend(), "cpu", "bootstrap", params)
    # the SE is still right (any resamples give it): only the like-for-like comparison catches this
    assert not check.passed and "FAILED replicates vs float64" in check.detail and "SE vs analytic" in check.detail


def test_a_sampler_aimed_at_the_wrong_target_fails(monkeypatch):
    monkeypatch.setattr(mcmc, "log_density", lambda x: (x[:, 0] ** 2 + x[:, 1] ** 2) * -0.5)  # ρ = 0
    check, metrics = _checked(NumpyBackend(), "cpu", "mcmc", {**SMALL["mcmc"][1], "dtype": "float64"})
    assert not check.passed and "cov x1 x2" in check.detail.split("FAILED")[1].split(";")[0]


def test_a_wrong_critical_value_fails(monkeypatch):
    honest = simstudy.decision_functions  # the test rejects at |t| > 1.8; the exact power stays at t_crit
    monkeypatch.setattr(simstudy, "decision_functions", lambda ops, critical: honest(ops, 1.8))
    check, _ = _checked(NumpyBackend(), "cpu", "simstudy", {"replicates": 4000, "group_size": 20, "dtype": "float64"})
    assert not check.passed and "power at d=0.0" in check.detail


def test_a_result_found_on_another_device_fails():
    from fakes import FakeBackend

    check, _ = _checked(FakeBackend(location_seen="cpu"), "fake:0", "montecarlo", {"n": 1 << 16, "dtype": "float64"})
    assert not check.passed and "FAILED device" in check.detail and "ran on cpu, asked for fake:0" in check.detail


# -- references and accuracy figures --------------------------------------------------------------
def test_closed_form_references_match_published_values():
    assert montecarlo.black_scholes_call(100, 100, 0.05, 0.2, 1.0) == pytest.approx(10.450583572185565, rel=1e-12)
    assert simstudy.exact_power(0.0, 20) == pytest.approx(0.05, abs=1e-12)
    assert simstudy.exact_power(0.8, 20) == pytest.approx(0.6934, abs=5e-4)  # G*Power: n = 20 per group, d = 0.8


def test_trapezoid_bound_is_an_upper_bound_and_not_a_vacuous_one():
    ops = array_ops(NumpyBackend(), "cpu")
    offsets = ops.arange(0, 65, "int64")
    chunk = integrate.chunk_function(ops, "trapezoid", "float64")
    error = abs(float(integrate.weighted_sum(ops, chunk, offsets, "trapezoid", 64, "float64")) - integrate.EXACT)
    bound = integrate.truncation_bound("trapezoid", 64)
    assert bound / 20 < error < bound  # the true error is h²/12·|f'(2) − f'(0)| ≈ bound / 7.4


def test_lower_precision_reports_the_accuracy_it_costs():
    cpu = NumpyBackend()
    figures = {dtype: _checked(cpu, "cpu", "montecarlo", {"n": 1 << 16, "dtype": dtype})[1]
               for dtype in ("float64", "float32")}
    assert 0 < figures["float32"]["rel_error_vs_float64"] < 1e-5 and "rel_error_vs_float64" not in figures["float64"]
    quad = {dtype: _checked(cpu, "cpu", "integrate", {"rule": "simpson", "n": 1 << 16, "dtype": dtype})[1]
            for dtype in ("float64", "float32")}
    assert quad["float64"]["abs_error"] < 1e-13 < 1e-10 < quad["float32"]["abs_error"] < 1e-5
    kde = {dtype: _checked(cpu, "cpu", "distance", {"n": 300, "d": 16, "dtype": dtype})[1]
           for dtype in ("float64", "float32")}
    assert kde["float64"]["rel_error_vs_float64"] < 1e-13 < 1e-9 < kde["float32"]["rel_error_vs_float64"] < 1e-5
    _, power = _checked(cpu, "cpu", "simstudy", {"replicates": 1000, "group_size": 20, "dtype": "float32"})
    assert 0 <= power["decisions_changed_vs_float64"] <= 4 and len(power["power"]) == len(simstudy.EFFECT_SIZES)


def test_device_generators_repeat_from_their_seed():
    for name in ("numpy", "torch"):
        backend, device = _backend_device(name)
        ops = array_ops(backend, device)
        first, again, other = (ops.to_host64(device_random(ops, s).normal((1000,), "float32")) for s in (7, 7, 8))
        assert np.array_equal(first, again) and not np.array_equal(first, other)
        assert abs(first.mean()) < 0.15 and 0.85 < first.std() < 1.15


def test_the_kernels_generator_is_random123s_philox4x32_10():
    backend, device = _backend_device("pyopencl")
    import pyopencl as cl
    import pyopencl.array as cla

    from accelbench.workloads.stats import opencl_kernels

    queue = backend.empty((1,), "float32", device).queue
    source = opencl_kernels.PREAMBLES["float32"] + "#define RL 1\n" + opencl_kernels.COMMON_SRC + (
        "__kernel void raw(__global const uint *in, __global uint *out) { const int i = get_global_id(0);"
        " vstore4(philox(in[6*i], in[6*i+1], in[6*i+2], in[6*i+3], in[6*i+4], in[6*i+5]), i, out); }")
    program = cl.Program(queue.context, source).build()
    # Random123's kat_vectors for philox4x32_10: (counter, key) -> output
    vectors = [((0, 0, 0, 0, 0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
               ((0xFFFFFFFF,) * 6, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
               ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344, 0xA4093822, 0x299F31D0),
                (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1))]
    words = cla.to_device(queue, np.array([v for vector, _ in vectors for v in vector], dtype=np.uint32))
    out = cla.empty(queue, (4 * len(vectors),), np.uint32)
    program.raw(queue, (len(vectors),), None, words.data, out.data)
    assert out.get().reshape(-1, 4).tolist() == [list(expected) for _, expected in vectors]


def test_mcmc_refuses_too_few_steps_for_its_check():
    with pytest.raises(Unsupported, match="at least 4000 steps"):
        get_workload("mcmc").prepare(NumpyBackend(), "cpu", {"variant": "sequential", "chains": 1, "steps": 500,
                                                              "dtype": "float64"}, SEED)


# -- one chain cannot use parallel hardware; many chains can ----------------------------------------
def _chain_steps_per_s(backend, device, params) -> float:
    prepared = get_workload("mcmc").prepare(backend, device, params, SEED)
    best = math.inf
    for _ in range(3):  # the best of three: the machine is shared
        start = time.perf_counter()
        prepared.compute()
        backend.synchronize(device)
        best = min(best, time.perf_counter() - start)
    return params["chains"] * params["steps"] / best


@pytest.mark.parametrize("backend_name", ["numpy", "torch"])
def test_many_chains_amortise_the_per_step_cost_one_chain_pays(backend_name):
    backend, device = _backend_device(backend_name)
    with backend.threads(1):  # one thread: any gain is from vectorising across chains, not from cores
        one = _chain_steps_per_s(backend, device, {"variant": "sequential", "chains": 1, "steps": 4000,
                                                   "dtype": "float32"})
        many = _chain_steps_per_s(backend, device, {"variant": "chains", "chains": 4096, "steps": 200,
                                                    "dtype": "float32"})
    # a step costs about the same whether it moves 1 chain or 4096: expect ~100-1000x, assert 20x
    assert many > 20 * one, f"{backend_name}: {many:.3g} chain-steps/s for 4096 chains vs {one:.3g} for one"


def test_stats_modules_import_no_framework():
    code = ("import accelbench.workloads.stats.montecarlo, accelbench.workloads.stats.bootstrap, "
            "accelbench.workloads.stats.integrate, accelbench.workloads.stats.simstudy, "
            "accelbench.workloads.stats.distance, accelbench.workloads.stats.mcmc, "
            "accelbench.workloads.stats.opencl_runner, sys; "
            "print([m for m in ('torch', 'jax', 'cupy', 'pyopencl', 'scipy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
