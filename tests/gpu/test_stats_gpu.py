"""The statistics workloads on a real GPU (scripts/gpu_check.sh runs these with --run-gpu).

What a 2-core CPU cannot show: many independent chains (and Monte Carlo draws) win on thousands of
lanes, while one sequential chain, a launch per array op per step, loses to one CPU core."""
import time

import pytest

from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.backends.registry import get_backend
from accelbench.workloads.registry import get_workload

pytestmark = pytest.mark.gpu
SEED = 20261202
PARAMS = {
    "montecarlo": {"n": 1 << 22},
    "bootstrap": {"stat": "ols", "resamples": 10000, "n": 501},
    "integrate": {"rule": "simpson", "n": 10**7},
    "simstudy": {"replicates": 10000, "group_size": 20},
    "distance": {"n": 5000, "d": 16},
    "mcmc": {"variant": "chains", "chains": 16384, "steps": 500},
}


def _gpu():
    pytest.importorskip("torch")
    backend = get_backend("torch")
    gpus = [d for d in backend.device_ids() if d.split(":")[0] in ("cuda", "rocm")]
    if not gpus:
        pytest.skip("torch sees no CUDA or ROCm device")
    return backend, gpus[0]


def _best_s(backend, device, name, params, repeats=3):
    prepared = get_workload(name).prepare(backend, device, params, SEED)
    prepared.compute()  # first call apart: lazy init, allocator warm-up
    backend.synchronize(device)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        prepared.compute()
        backend.synchronize(device)
        best = min(best, time.perf_counter() - start)
    return best


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(PARAMS))
def test_each_workload_passes_its_check_on_the_gpu(name, dtype):
    backend, device = _gpu()
    prepared = get_workload(name).prepare(backend, device, {**PARAMS[name], "dtype": dtype}, SEED)
    check = prepared.called_and_checked(lambda: backend.synchronize(device))
    assert check.passed, check.detail
    assert check.device_seen == device


def test_many_chains_win_on_the_gpu_while_one_chain_loses():
    backend, device = _gpu()
    cpu = NumpyBackend()
    sequential = {"variant": "sequential", "chains": 1, "steps": 4000, "dtype": "float32"}
    chains = {"variant": "chains", "chains": 65536, "steps": 200, "dtype": "float32"}
    with cpu.threads(1):
        cpu_sequential, cpu_chains = (_best_s(cpu, "cpu", "mcmc", p) for p in (sequential, chains))
    gpu_sequential, gpu_chains = (_best_s(backend, device, "mcmc", p) for p in (sequential, chains))
    # one chain: ~20 launches per step, each a few µs, against numpy's ~1 µs ops on one core
    assert gpu_sequential > cpu_sequential, (gpu_sequential, cpu_sequential)
    # 65536 chains: the same launches each move 65536 chains
    assert cpu_chains / gpu_chains > 5, (cpu_chains, gpu_chains)


def test_float32_monte_carlo_draws_beat_one_cpu_core_tenfold():
    backend, device = _gpu()
    cpu = NumpyBackend()
    params = {"n": 10**7, "dtype": "float32"}
    with cpu.threads(1):
        cpu_s = _best_s(cpu, "cpu", "montecarlo", params)
    assert cpu_s / _best_s(backend, device, "montecarlo", params) > 10
