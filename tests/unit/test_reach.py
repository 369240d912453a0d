"""The tutorial trap: GPUs in the inventory that no backend reaches are named, grouped, with reason and fix.

Inventories are NVML recordings (tests/data/nvml) replayed through the real probe; torch is the
real one installed here (a CPU-only build) or a fake replaying a CUDA build's answers.
"""
from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from accelbench.backends.base import Availability
from accelbench.backends.device_reach import with_backend_reach
from accelbench.devices import frameworks, opencl, opencl_build
from accelbench.runner.reach import UnreachedDevices, unreached_devices
from fakes import HostArrayBackend
from recorded_gpus import SM_50_TO_90, fake_cuda_torch, nvml_devices

CPU_ONLY_FIX = "install a CUDA build of torch (https://pytorch.org/get-started/locally/)"


@pytest.fixture
def cpu_torch():
    torch = pytest.importorskip("torch")
    if torch.version.cuda is not None or getattr(torch.version, "hip", None):
        pytest.skip("the torch installed here is a GPU build")
    from accelbench.backends.torch_backend import TorchBackend

    return TorchBackend(), torch.__version__


# -- torch ---------------------------------------------------------------------------------------

def test_two_k40m_and_a_cpu_only_torch_are_named_with_the_fix(cpu_torch):
    backend, version = cpu_torch
    (group,) = unreached_devices(nvml_devices("k40m"), {"torch": backend})
    assert group.device_ids == ("cuda:0", "cuda:1") and group.name == "Tesla K40m"
    assert group.text == (f"2 × Tesla K40m (cuda:0, cuda:1) found, not measured: torch {version} is a "
                          f"CPU-only build: {CPU_ONLY_FIX}")


def test_four_h200_and_a_cpu_only_torch(cpu_torch):
    backend, version = cpu_torch
    (group,) = unreached_devices(nvml_devices("h200"), {"torch": backend})
    assert group.text.startswith("4 × NVIDIA H200 (cuda:0, cuda:1, cuda:2, cuda:3) found, not measured: "
                                 f"torch {version} is a CPU-only build")


def test_compute_capability_below_the_builds_arch_list_is_not_reached():
    from accelbench.backends.torch_backend import TorchBackend

    backend = TorchBackend(fake_cuda_torch(gpus=2, capability=(3, 0), arch_list=SM_50_TO_90))
    assert backend.device_ids() == ["cpu"]  # torch lists them, but every kernel would fail
    sentence = ("compute capability 3.0 is below what the installed torch 2.5.1+cu121 supports (5.0; it is "
                "built for sm_50 … sm_90): install a torch built for sm_30, an older release "
                "(https://pytorch.org/get-started/previous-versions/)")
    assert backend.availability() == Availability(True, f"cpu only: cuda:0: {sentence}; cuda:1: {sentence}")
    (group,) = unreached_devices(nvml_devices("k40m", capability=[3, 0]), {"torch": backend})
    assert group.text == f"2 × Tesla K40m (cuda:0, cuda:1) found, not measured: {sentence}"


def test_the_same_build_reaches_a_supported_gpu():
    from accelbench.backends.torch_backend import TorchBackend

    backend = TorchBackend(fake_cuda_torch(gpus=4, capability=(9, 0), arch_list=SM_50_TO_90))
    assert backend.device_ids() == ["cpu", "cuda:0", "cuda:1", "cuda:2", "cuda:3"]
    assert unreached_devices(nvml_devices("h200"), {"torch": backend}) == []


def test_a_gpu_newer_than_the_build_is_told_to_upgrade():
    from accelbench.backends.torch_backend import TorchBackend

    backend = TorchBackend(fake_cuda_torch(gpus=1, capability=(12, 0), arch_list=SM_50_TO_90))
    assert backend.device_ids() == ["cpu"]
    assert "compute capability 12.0 has no kernels in the installed torch 2.5.1+cu121" in backend.availability().reason
    assert "install a newer torch" in backend.availability().reason


def test_hidden_by_cuda_visible_devices_is_named_and_the_visible_ones_are_reached(monkeypatch):
    from accelbench.backends.torch_backend import TorchBackend

    monkeypatch.setattr(frameworks, "installed", lambda name: name == "torch")
    monkeypatch.setattr(frameworks, "torch_build", lambda: {"version": "2.5.1", "cuda": "12.1", "hip": None})
    devices = with_backend_reach(nvml_devices("h200", environ={"CUDA_VISIBLE_DEVICES": "2,0"}))
    backend = TorchBackend(fake_cuda_torch(gpus=2, capability=(9, 0), arch_list=SM_50_TO_90))
    (group,) = unreached_devices(devices, {"torch": backend})
    assert group.text == ("2 × NVIDIA H200 (cuda:1, cuda:3) found, not measured: "
                          "hidden by CUDA_VISIBLE_DEVICES='2,0': list this device there or unset it")


# -- every backend speaks for itself -------------------------------------------------------------

def test_each_installed_backend_gives_its_own_reason_in_order(cpu_torch):
    from accelbench.session import load_backends

    backends = load_backends()
    (group,) = [g for g in unreached_devices(nvml_devices("k40m"), backends) if g.name == "Tesla K40m"]
    spoken = [b for b, _ in group.reasons]
    assert spoken[0] == "torch" and "numpy" not in spoken and "pyopencl" not in spoken
    assert set(spoken) == {"torch", "jax", "cupy"}  # each has something to do with an NVIDIA GPU
    reasons = dict(group.reasons)
    assert reasons["torch"] == f"torch {cpu_torch[1]} is a CPU-only build: {CPU_ONLY_FIX}"
    assert "pip install" in reasons["jax"] and "pip install" in reasons["cupy"]


def test_jax_without_a_cuda_plugin_says_so():
    jax = pytest.importorskip("jax")
    from accelbench.backends.jax_backend import JaxBackend
    from accelbench.devices.frameworks import jax_has_gpu_plugin

    if jax_has_gpu_plugin():
        pytest.skip("a jax GPU plugin is installed here")
    backend = JaxBackend()
    expected = f'jax {jax.__version__} has no CUDA plugin: pip install -U "jax[cuda12]"'
    assert backend.unreached_reason(nvml_devices("k40m")[0]) == expected
    assert backend.availability().reason == f"cpu only: {expected}"


def test_cupy_not_installed_is_the_reason():
    from accelbench.backends.cupy_backend import CupyBackend

    backend = CupyBackend()
    if backend.availability().ok or "not installed" not in backend.availability().reason:
        pytest.skip("cupy is installed here")
    assert backend.unreached_reason(nvml_devices("k40m")[0]) == "cupy is not installed: pip install accelbench[cupy]"


class _Plugin(HostArrayBackend):
    name = "plugin"

    def __init__(self, explain):
        self.explain = explain

    def availability(self):
        return Availability(True)

    def device_ids(self):
        return ["cpu"]

    def unreached_reason(self, device):
        return self.explain(device)


def test_a_plugin_that_fails_to_explain_and_one_that_is_silent():
    gpus = nvml_devices("k40m")

    def broken(device):
        raise KeyError("compute_capability")

    (group,) = unreached_devices(gpus, {"plugin": _Plugin(broken)})
    assert group.reasons == (("plugin", "plugin failed while checking it: KeyError: 'compute_capability'"),)
    (group,) = unreached_devices(gpus, {"plugin": _Plugin(lambda d: None)})
    assert group.text == ("2 × Tesla K40m (cuda:0, cuda:1) found, not measured: no backend in this run (plugin) "
                          "works with it; `accelbench list` shows what each reaches")


def test_groups_survive_the_round_trip_through_the_machine_record():
    group = UnreachedDevices("Tesla K40m", ("cuda:0", "cuda:1"), (("torch", "why: fix"),))
    assert UnreachedDevices.from_dict(json.loads(json.dumps(group.to_dict()))) == group
    assert group.to_dict()["count"] == 2


# -- OpenCL devices whose compiler cannot build a kernel --------------------------------------------

ZEN5_LOG = ("clBuildProgram failed: BUILD_PROGRAM_FAILURE - clBuildProgram failed: BUILD_PROGRAM_FAILURE\n\n"
            "Build on <pyopencl.Device 'pthread-AMD EPYC' on 'Portable Computing Language'>:\n\n"
            "error: unknown target CPU 'generic'\nDevice pthread-AMD EPYC failed to build the program\n")
WHEEL_POCL = "OpenCL 3.0 PoCL 3.0-rc2  Linux, Release, RELOC, LLVM 14.0.6, SLEEF, DISTRO, POCL_DEBUG"


@pytest.mark.parametrize("platform_name, version, expected", [
    ("Portable Computing Language", WHEEL_POCL,
     ("the PoCL in the pyopencl wheel cannot compile for this CPU (LLVM: unknown target CPU 'generic'): "
      "install Debian's pocl-opencl-icd or a newer PoCL")),
    ("Portable Computing Language", "OpenCL 3.0 PoCL 3.1+debian  Linux",
     ("PoCL 3.1+debian cannot compile for this CPU (LLVM: unknown target CPU 'generic'): "
      "install Debian's pocl-opencl-icd or a newer PoCL")),
    ("NVIDIA CUDA", "OpenCL 3.0 CUDA 12.4.131",
     ("its OpenCL compiler cannot build a trivial kernel (unknown target CPU 'generic'): "
      "update the device's OpenCL driver")),
])
def test_build_failures_are_explained_with_the_fix(platform_name, version, expected):
    assert opencl_build.explain(ZEN5_LOG, platform_name, version, wheel_pocl_version="3.0") == expected


def test_a_recorded_device_that_cannot_build_is_listed_with_a_warning_and_reached_by_none():
    pocl = {"name": "Portable Computing Language", "vendor": "The pocl project", "version": WHEEL_POCL,
            "devices": [{"name": "pthread-AMD EPYC", "vendor": "AuthenticAMD", "type": opencl.DEVICE_TYPE_CPU,
                         "build_failure": "the PoCL in the pyopencl wheel cannot compile for this CPU"}]}
    (device,) = opencl.probe(opencl.recorded_platforms([pocl]))
    assert device.id == "opencl:0:0" and device.reach == {}
    assert "not measurable: the PoCL in the pyopencl wheel cannot compile for this CPU" in device.warnings
    del pocl["devices"][0]["build_failure"]
    (device,) = opencl.probe(opencl.recorded_platforms([pocl]))
    assert device.reach == {"pyopencl": "opencl:0:0"} and not any("not measurable" in w for w in device.warnings)


@pytest.fixture
def opencl_backend():
    pytest.importorskip("pyopencl")
    from accelbench.backends.opencl_backend import OpenCLBackend

    opencl_build.forget()
    backend = OpenCLBackend()
    if not backend._discover():
        pytest.skip("no OpenCL device here")
    yield backend
    opencl_build.forget()


def test_real_devices_said_to_build_do_build_and_run_and_the_others_really_fail(opencl_backend):
    import numpy as np
    import pyopencl as cl

    for device_id, cl_device in opencl_backend._discover().items():
        context = cl.Context([cl_device])
        failure = opencl_build.build_failure(cl_device)
        if failure:
            assert failure.endswith(("a newer PoCL", "OpenCL driver")) and device_id not in opencl_backend.device_ids()
            with pytest.raises(cl.Error):
                cl.Program(context, opencl_build.TRIVIAL_KERNEL).build()
            continue
        assert device_id in opencl_backend.device_ids()
        queue = cl.CommandQueue(context)
        program = cl.Program(context, opencl_build.TRIVIAL_KERNEL).build()
        host = np.arange(8, dtype=np.float32)
        buffer = cl.Buffer(context, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=host)
        program.accelbench_probe(queue, host.shape, None, buffer)
        cl.enqueue_copy(queue, host, buffer).wait()
        assert host.tolist() == [float(i + 1) for i in range(8)]


def test_a_device_that_cannot_build_is_skipped_up_front_with_its_reason(opencl_backend, monkeypatch):
    broken_id, broken = next(iter(opencl_backend._discover().items()))
    reason = "PoCL 9.9 cannot build a trivial kernel (boom): install Debian's pocl-opencl-icd or a newer PoCL"
    real_try = opencl_build._try_build
    monkeypatch.setattr(opencl_build, "_try_build", lambda d: reason if d.int_ptr == broken.int_ptr else real_try(d))
    assert broken_id not in opencl_backend.device_ids()
    assert f"{broken_id}: {reason}" in opencl_backend.availability().reason
    inventory_device = SimpleNamespace(id=broken_id, reach={}, properties={}, warnings=())
    assert opencl_backend.unreached_reason(inventory_device) == reason
    assert opencl_backend.unreached_reason(nvml_devices("k40m")[0]) is None  # not an OpenCL id: not its business
