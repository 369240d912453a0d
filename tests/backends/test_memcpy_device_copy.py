"""memcpy's device-to-device direction on a real OpenCL device (PoCL's CPU device here): the copy is
verified bit for bit, its placement is read from the buffer, and it counts read + write."""
from __future__ import annotations

import pytest

from accelbench.devices.model import Device, PeakFigure
from accelbench.errors import Unsupported
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.runner.plausibility import bounding_device
from accelbench.timing.rigor import RIGORS
from accelbench.workloads.memcpy import Memcpy

SEED = 20261203


@pytest.fixture(scope="module")
def opencl():
    pytest.importorskip("pyopencl", reason="pyopencl is not installed: pip install accelbench[opencl]")
    from accelbench.backends.opencl_backend import OpenCLBackend

    backend = OpenCLBackend()
    if not backend.availability().ok:
        pytest.skip(f"no OpenCL device: {backend.availability().reason}")
    return backend, backend.device_ids()[0]


def test_the_grid_adds_one_pageable_device_copy_per_size():
    grid = Memcpy().grid([2**20, 2**26], None, quick=False)
    copies = [p for p in grid if p["direction"] == "d2d"]
    assert copies == [{"direction": "d2d", "bytes": 2**20, "pinned": False},
                      {"direction": "d2d", "bytes": 2**26, "pinned": False}]
    assert len(grid) == 2 * 2 * 2 + 2  # pageable and pinned, both host directions, and the device copies


def test_a_device_copy_counts_read_and_write_a_host_copy_once():
    memcpy = Memcpy()
    assert memcpy.work({"direction": "d2d", "bytes": 1000, "pinned": False}).bytes_moved == 2000
    assert memcpy.work({"direction": "h2d", "bytes": 1000, "pinned": True}).bytes_moved == 1000


def test_device_copy_is_bit_identical_and_placed_on_the_device(opencl):
    backend, device = opencl
    prepared = Memcpy().prepare(backend, device, {"direction": "d2d", "bytes": 3 * 2**20 + 12, "pinned": False},
                                SEED)
    try:
        check = prepared.called_and_checked(lambda: backend.synchronize(device))
    finally:
        prepared.release()
    assert check.passed, check.detail
    assert check.detail.startswith("bit-identical device copy")
    assert check.device_seen == device


def test_a_copy_that_drops_data_fails_its_check(opencl):
    backend, device = opencl

    class Truncating(type(backend)):  # copies all but the last element: the poisoned NaN stays there
        def copy(self, a, out):
            head = self.from_host(self.to_host(a)[:-1], device)
            whole = self.to_host(out)
            whole[:-1] = self.to_host(head)
            return self.from_host(whole, device)

    lying = Truncating()
    prepared = Memcpy().prepare(lying, device, {"direction": "d2d", "bytes": 4096, "pinned": False}, SEED)
    try:
        check = prepared.called_and_checked(lambda: lying.synchronize(device))
    finally:
        prepared.release()
    assert not check.passed
    assert "data changed" in check.detail


def test_pinned_makes_no_sense_for_a_device_copy(opencl):
    backend, device = opencl
    with pytest.raises(Unsupported, match="never touches host memory"):
        Memcpy().prepare(backend, device, {"direction": "d2d", "bytes": 4096, "pinned": True}, SEED)


def test_the_runner_measures_a_device_copy_end_to_end(opencl):
    from accelbench.runner.execute import measure_item
    from accelbench.runner.plan import PlanItem

    backend, device = opencl
    spec = Spec.make("memcpy", "pyopencl", device, direction="d2d", bytes=2**20, pinned=False)
    m = measure_item(PlanItem(spec, None), backend, RIGORS["quick"], seed=SEED)
    assert m.check.passed, m.check.detail
    assert m.check.device_seen == device
    assert m.work.bytes_moved == 2 * 2**20
    assert not any("refused" in reason for reason in m.verdict_reasons)


def _measurement(direction: str) -> Measurement:
    spec = Spec.make("memcpy", "torch", "cuda:0", direction=direction, bytes=2**26, pinned=False)
    return Measurement(spec=spec, phases_s={"compute": (1e-4,)}, first_call_s=1e-4,
                       work=Work(0.0, 2**27), check=Check(True, 0.0, 0.0, "ok", "cuda:0"))


def test_a_device_copy_is_bounded_by_the_device_a_host_copy_by_the_host():
    gpu = Device(id="cuda:0", kind="gpu", vendor="NVIDIA", name="H200", source="nvml",
                 peaks=(PeakFigure("memory_bandwidth", 4.8e12, "table", "NVIDIA H200 datasheet"),))
    cpu = Device(id="cpu", kind="cpu", vendor="AMD", name="EPYC", source="proc")
    devices = {"cuda:0": gpu, "cpu": cpu}
    assert bounding_device(_measurement("d2d"), devices) is gpu
    assert bounding_device(_measurement("h2d"), devices) is cpu


def test_a_copy_into_host_memory_says_why_its_sync_is_not_proven_on_the_call(opencl):
    """Its output is a numpy array the device writes into: reading it back waits for nothing. Said
    so, not an AttributeError from reading a numpy array back through the device's backend."""
    from accelbench.runner.execute import measure_item
    from accelbench.runner.plan import PlanItem

    backend, device = opencl
    spec = Spec.make("memcpy", "pyopencl", device, direction="d2h", bytes=2**20, pinned=False)
    m = measure_item(PlanItem(spec, None), backend, RIGORS["quick"], seed=SEED)
    said = " ".join(str(w) for w in m.warnings + m.verdict_reasons)
    assert "its output is host memory the device writes into" in said, said
    assert "Error" not in said, said
