import json
import subprocess
import sys
import types
from pathlib import Path

import pytest

from accelbench.devices import jax_probe, nvidia, torch_probe
from accelbench.devices.model import NOT_INSTALLED, OK
from accelbench.devices.nvml_adapter import RecordedNvml
from accelbench.devices.probing import run_probe

NVML_DATA = Path(__file__).parents[1] / "data" / "nvml"
K40_UUIDS = ("8f6c2b1e-4d3a-5b7c-9e0f-1a2b3c4d5e6f", "2d9e7f40-8a1b-4c6d-b3e2-7f8091a2b3c4")


def nvml_devices(name, environ=None):
    rec = json.loads((NVML_DATA / f"{name}.json").read_text())
    return nvidia.probe(RecordedNvml(rec), environ=environ or {})


def k40_props(uuid, **overrides):
    values = dict(name="Tesla K40m", major=3, minor=5, multi_processor_count=15, total_memory=11995578368,
                  L2_cache_size=1572864, clock_rate=745000, memory_clock_rate=3004000, memory_bus_width=384,
                  uuid=uuid, is_integrated=0)
    values.update(overrides)
    return types.SimpleNamespace(**values)


def fake_torch(cuda_props=(), hip=None, mps=False, xpu_props=None):
    cuda = types.SimpleNamespace(is_available=lambda: bool(cuda_props), device_count=lambda: len(cuda_props),
                                 get_device_properties=lambda i: cuda_props[i])
    module = types.SimpleNamespace(
        __version__="2.5.1+cu124", version=types.SimpleNamespace(cuda=None if hip else "12.4", hip=hip),
        cuda=cuda, backends=types.SimpleNamespace(mps=types.SimpleNamespace(is_available=lambda: mps)),
        get_num_threads=lambda: 8, get_num_interop_threads=lambda: 4)
    if mps:
        module.mps = types.SimpleNamespace(recommended_max_memory=lambda: 11 * 1024 ** 3)
    if xpu_props is not None:
        module.xpu = types.SimpleNamespace(is_available=lambda: True, device_count=lambda: len(xpu_props),
                                           get_device_properties=lambda i: xpu_props[i])
    return module


# --- torch, the real one (CPU build here) ------------------------------------------------

def test_real_torch_gives_the_cpu():
    torch = pytest.importorskip("torch")
    devices = torch_probe.probe()
    cpu = devices[-1]
    assert (cpu.id, cpu.kind, cpu.reach) == ("cpu", "cpu", {"torch": "cpu"})
    assert cpu.properties["torch_version"] == torch.__version__
    assert cpu.properties["torch_num_threads"] == torch.get_num_threads()
    if not torch.cuda.is_available():
        assert not [d for d in devices if d.id.startswith(("cuda:", "rocm:"))]


def test_real_torch_probe_status_is_ok():
    pytest.importorskip("torch")
    assert run_probe("torch", torch_probe.probe).status == OK


def test_torch_missing_is_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    report = run_probe("torch", torch_probe.probe)
    assert report.status == NOT_INSTALLED and "pip install accelbench[torch]" in report.message


# --- torch CUDA branch, with a stand-in module ---------------------------------------------

def test_fake_cuda_torch_alone():
    torch = fake_torch([k40_props(K40_UUIDS[0]), k40_props(K40_UUIDS[1])])
    gpu0, gpu1, cpu = torch_probe.probe(torch, environ={})
    assert (gpu0.id, gpu1.id, cpu.id) == ("cuda:0", "cuda:1", "cpu")
    assert gpu0.reach == {"torch": "cuda:0"} and gpu0.source == "torch"
    p = gpu0.properties
    assert (p["compute_capability"], p["sm_count"], p["l2_cache_bytes"]) == ("3.5", 15, 1572864)
    assert (p["max_sm_clock_mhz"], p["memory_total_bytes"]) == (745, 11995578368)
    assert p["uuid"] == "GPU-" + K40_UUIDS[0]
    assert gpu0.peak("fp32", "formula").value == pytest.approx(15 * 192 * 745e6 * 2)
    assert gpu0.peak("memory_bandwidth", "formula").value == pytest.approx(3004e6 * 2 * 48)
    assert gpu0.peak("fp32", "table") is not None  # no light probe to carry the datasheet


def test_fake_torch_without_l2_or_clocks():
    props = k40_props(K40_UUIDS[0], clock_rate=0, memory_clock_rate=0)
    del props.L2_cache_size
    gpu, _ = torch_probe.probe(fake_torch([props]), environ={})
    assert "l2_cache_bytes" not in gpu.properties and "max_sm_clock_mhz" not in gpu.properties
    assert gpu.peak("fp32", "formula") is None
    assert any("clock" in w for w in gpu.warnings)


def test_torch_ids_follow_cuda_visible_devices_without_nvml():
    torch = fake_torch([k40_props(K40_UUIDS[1])])
    gpu, _ = torch_probe.probe(torch, environ={"CUDA_VISIBLE_DEVICES": "1"})
    assert gpu.id == "cuda:1" and gpu.reach == {"torch": "cuda:0"}


def test_torch_ids_under_a_uuid_list_without_nvml_warn():
    torch = fake_torch([k40_props(K40_UUIDS[1])])
    gpu, _ = torch_probe.probe(torch, environ={"CUDA_VISIBLE_DEVICES": "GPU-2d9e"})
    assert gpu.id == "cuda:0" and any("CUDA_VISIBLE_DEVICES" in w for w in gpu.warnings)


def test_torch_ids_match_the_light_probe_by_uuid():
    light = nvml_devices("k40m", environ={"CUDA_VISIBLE_DEVICES": "GPU-2d9e"})
    torch = fake_torch([k40_props(K40_UUIDS[1])])
    gpu, _ = torch_probe.probe(torch, light_devices=light, environ={"CUDA_VISIBLE_DEVICES": "GPU-2d9e"})
    assert gpu.id == "cuda:1" and gpu.reach == {"torch": "cuda:0"} and gpu.warnings == ()


def test_torch_adds_no_formula_the_light_probe_already_has():
    light = nvml_devices("k40m")
    gpu0, _, _ = torch_probe.probe(fake_torch([k40_props(u) for u in K40_UUIDS]), light_devices=light, environ={})
    assert [p for p in gpu0.peaks if p.provenance == "formula"] == []
    assert gpu0.peak("fp32", "table") is None  # the light device carries the datasheet already


def test_torch_completes_what_an_old_nvml_lacks():
    light = nvml_devices("k40m_old_driver")  # no core count, no bus width; max SM clock 875 MHz
    assert light[0].peak("fp32", "formula") is None
    gpu, _ = torch_probe.probe(fake_torch([k40_props(K40_UUIDS[0])]), light_devices=light, environ={})
    assert gpu.id == "cuda:0"
    fp32 = gpu.peak("fp32", "formula")
    assert fp32.value == pytest.approx(15 * 192 * 875e6 * 2)  # torch's SMs, NVML's maximum clock
    assert gpu.peak("fp64", "formula").value == pytest.approx(fp32.value / 3)
    assert gpu.peak("memory_bandwidth", "formula").value == pytest.approx(3004e6 * 2 * 48)


def test_rocm_torch_devices():
    props = types.SimpleNamespace(name="AMD Instinct MI300X", major=9, minor=4, multi_processor_count=304,
                                  total_memory=206141652992, gcnArchName="gfx942:sramecc+:xnack-", uuid="")
    gpu, _ = torch_probe.probe(fake_torch([props], hip="6.2"), environ={})
    assert (gpu.id, gpu.vendor, gpu.reach) == ("rocm:0", "AMD", {"torch": "cuda:0"})
    assert gpu.properties["compute_unit_count"] == 304 and "compute_capability" not in gpu.properties
    assert gpu.peaks == ()


def test_mps_and_xpu_devices():
    xpu = types.SimpleNamespace(name="Intel(R) Data Center GPU Max 1550", total_memory=68719476736,
                                max_compute_units=448, gpu_eu_count=448, driver_version="1.3.27642",
                                platform_name="Intel(R) oneAPI Unified Runtime over Level-Zero",
                                vendor="Intel(R) Corporation")
    devices = {d.id: d for d in torch_probe.probe(fake_torch(mps=True, xpu_props=[xpu]), environ={})}
    assert devices["mps"].reach == {"torch": "mps"} and devices["mps"].vendor == "Apple"
    assert devices["mps"].properties["mps_recommended_max_memory_bytes"] == 11 * 1024 ** 3
    assert devices["xpu:0"].reach == {"torch": "xpu:0"} and devices["xpu:0"].properties["eu_count"] == 448
    assert "cpu" in devices


def test_a_broken_cuda_does_not_hide_the_cpu():
    def broken(_):
        raise RuntimeError("CUDA error: initialization error")

    torch = fake_torch([k40_props(K40_UUIDS[0])])
    torch.cuda.get_device_properties = broken
    (cpu,) = torch_probe.probe(torch, environ={})
    assert cpu.id == "cpu" and any("initialization error" in w for w in cpu.warnings)


# --- jax ---------------------------------------------------------------------------------

def fake_jax(platforms):
    def local_devices(backend=None):
        if backend not in platforms:
            raise RuntimeError(f"Unknown backend {backend}")
        return platforms[backend]

    return types.SimpleNamespace(__version__="0.4.35", local_devices=local_devices)


def jax_device(platform, index, kind, memory=None):
    stats = (lambda: {"bytes_limit": memory}) if memory else (lambda: None)
    return types.SimpleNamespace(platform=platform, id=index, device_kind=kind, memory_stats=stats)


def test_jax_missing_is_not_installed(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    report = run_probe("jax", jax_probe.probe)
    assert report.status == NOT_INSTALLED and "pip install accelbench[jax]" in report.message


def test_jax_cpu_only():
    jax = fake_jax({"cpu": [jax_device("cpu", 0, "cpu"), jax_device("cpu", 1, "cpu")]})
    (cpu,) = jax_probe.probe(jax, environ={})
    assert (cpu.id, cpu.reach) == ("cpu", {"jax": "cpu:0"})
    assert cpu.properties["jax_cpu_device_count"] == 2 and cpu.properties["jax_version"] == "0.4.35"


def test_jax_gpus():
    gpus = [jax_device("gpu", i, "NVIDIA H200", memory=140 * 1024 ** 3) for i in range(2)]
    jax = fake_jax({"cpu": [jax_device("cpu", 0, "cpu")], "cuda": gpus})
    devices = jax_probe.probe(jax, environ={})
    assert [d.id for d in devices] == ["cuda:0", "cuda:1", "cpu"]
    assert devices[1].reach == {"jax": "cuda:1"} and devices[1].name == "NVIDIA H200"
    assert devices[0].properties["jax_memory_limit_bytes"] == 140 * 1024 ** 3


def test_jax_gpu_ids_follow_cuda_visible_devices():
    jax = fake_jax({"cuda": [jax_device("gpu", 0, "NVIDIA H200"), jax_device("gpu", 1, "NVIDIA H200")]})
    devices = jax_probe.probe(jax, environ={"CUDA_VISIBLE_DEVICES": "3,1"})
    assert [(d.id, d.reach["jax"]) for d in devices] == [("cuda:3", "cuda:0"), ("cuda:1", "cuda:1")]


def test_jax_tpu():
    jax = fake_jax({"tpu": [jax_device("tpu", 0, "TPU v5 lite")]})
    (tpu,) = jax_probe.probe(jax, environ={})
    assert (tpu.id, tpu.kind, tpu.vendor, tpu.reach) == ("tpu:0", "accelerator", "Google", {"jax": "tpu:0"})


# --- the light probes import no framework --------------------------------------------------

def test_light_probe_modules_import_no_framework():
    code = ("import sys; import accelbench.devices.nvidia, accelbench.devices.amd, accelbench.devices.apple, "
            "accelbench.devices.torch_probe, accelbench.devices.jax_probe, accelbench.devices.datasheets; "
            "print(sorted(m for m in ('torch', 'jax', 'pynvml', 'amdsmi', 'cupy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
