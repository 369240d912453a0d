"""On a real accelerator only (scripts/gpu_check.sh runs these with --run-gpu)."""
import pytest

from accelbench.timing.rigor import RIGORS

pytestmark = pytest.mark.gpu


def _cuda_backend():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    from accelbench.backends.registry import get_backend
    return get_backend("torch")


def test_nvml_probe_finds_the_gpus_with_formula_peaks():
    pytest.importorskip("pynvml")
    from accelbench.devices import nvidia
    devices = nvidia.probe()
    assert devices and all(d.id.startswith("cuda:") for d in devices)
    first = devices[0]
    assert first.properties["memory_total_bytes"] > 2**30
    assert first.peak("memory_bandwidth", "formula") is not None


def test_torch_and_nvml_agree_on_ids():
    pytest.importorskip("pynvml")
    _cuda_backend()
    from accelbench.devices.inventory import collect_inventory
    inventory = collect_inventory(("nvidia", "torch"))
    cuda = [d for d in inventory.devices if d.id.startswith("cuda:")]
    assert cuda and all("torch" in d.reach and "+" in d.source for d in cuda)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
def test_matmul_on_the_gpu_is_verified_and_stays_there(dtype):
    backend = _cuda_backend()
    if dtype not in backend.dtypes("cuda:0"):
        pytest.skip(f"no {dtype} on cuda:0")
    from accelbench.results import Spec
    from accelbench.runner.execute import measure_item
    from accelbench.runner.plan import PlanItem
    spec = Spec.make("matmul", "torch", "cuda:0", n=2048, dtype=dtype)
    m = measure_item(PlanItem(spec, None), backend, RIGORS["quick"], seed=1)
    assert m.check.passed, m.check.detail
    assert m.check.device_seen == "cuda:0"
    assert {"to_device", "to_host", "end_to_end"} <= set(m.phases_s)


def test_pinned_and_pageable_transfers_verify():
    backend = _cuda_backend()
    from accelbench.results import Spec
    from accelbench.runner.execute import measure_item
    from accelbench.runner.plan import PlanItem
    for pinned in (False, True):
        spec = Spec.make("memcpy", "torch", "cuda:0", direction="h2d", bytes=64 * 2**20, pinned=pinned)
        assert measure_item(PlanItem(spec, None), backend, RIGORS["quick"], seed=1).check.passed


def test_the_harness_synchronises_an_asynchronous_gpu():
    backend = _cuda_backend()
    import time

    import torch
    from accelbench.timing.harness import measure
    a = torch.rand((4096, 4096), device="cuda:0")
    timing = measure(lambda: a @ a, lambda: backend.synchronize("cuda:0"), rigor=RIGORS["quick"])
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(20):
        a @ a  # no sync: only the launches are timed
    naive_s = (time.perf_counter() - started) / 20
    torch.cuda.synchronize()
    assert timing.summary.median_s > 2 * naive_s
