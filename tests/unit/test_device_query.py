"""deviceQuery replayed: a fake CUDA runtime (ctypes library, CuPy module) and a fake HIP library answer
with an H200's and an MI250X GCD's attributes (tests/data/device_query: DATASHEET-DERIVED, not captured
from a real board, cross-checked against published captures; each value names its source), and with a
real H100 SXM5's (h100_sxm_captured.json: transcribed from a published deviceQuery capture), through the
same code a real runtime goes through."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from recorded_gpus import nvml_devices
from rich.console import Console

from accelbench.cli.info_render import _device_table
from accelbench.devices import amd, device_query_load, nvidia
from accelbench.devices.amd import RecordedAmdsmi
from accelbench.devices.device_query import CtypesSource, CupySource, QueryError, read_devices
from accelbench.devices.model import Device
from accelbench.devices.nvml_adapter import RecordedNvml
from accelbench.schemas import load_schema

DATA = Path(__file__).resolve().parent.parent / "data"

# What an H200 answers, written out by hand from the fixture's sources: a field the code drops,
# renames or reads from the wrong attribute id fails here.
H200 = {
    "compute_capability": "9.0", "multiprocessor_count": 132, "warp_size": 32, "max_threads_per_block": 1024,
    "max_threads_per_multiprocessor": 2048, "max_blocks_per_multiprocessor": 32,
    "max_block_dimensions": [1024, 1024, 64], "max_grid_dimensions": [2147483647, 65535, 65535],
    "shared_memory_per_block_bytes": 49152, "shared_memory_per_block_optin_bytes": 232448,
    "shared_memory_per_multiprocessor_bytes": 233472, "registers_per_block": 65536,
    "registers_per_multiprocessor": 65536, "total_constant_memory_bytes": 65536, "l2_cache_bytes": 62914560,
    "sm_clock_mhz": 1980.0, "memory_clock_mhz": 3201.0, "memory_bus_width_bits": 6144, "async_engine_count": 3,
    "concurrent_kernels": True, "unified_addressing": True, "kernel_exec_timeout": False, "ecc_enabled": True,
    "compute_mode": "default", "pci_bus_id": "0000:18:00.0",
}

# CuPy's getDeviceProperties names (cupy_backends runtime.pyx) for the cudaDeviceAttr names of the fixture
CUPY_KEYS = {
    "cudaDevAttrMultiProcessorCount": "multiProcessorCount", "cudaDevAttrWarpSize": "warpSize",
    "cudaDevAttrMaxThreadsPerBlock": "maxThreadsPerBlock", "cudaDevAttrMaxThreadsPerMultiProcessor":
    "maxThreadsPerMultiProcessor", "cudaDevAttrMaxBlocksPerMultiprocessor": "maxBlocksPerMultiProcessor",
    "cudaDevAttrMaxSharedMemoryPerBlock": "sharedMemPerBlock", "cudaDevAttrMaxSharedMemoryPerBlockOptin":
    "sharedMemPerBlockOptin", "cudaDevAttrMaxSharedMemoryPerMultiprocessor": "sharedMemPerMultiprocessor",
    "cudaDevAttrMaxRegistersPerBlock": "regsPerBlock", "cudaDevAttrMaxRegistersPerMultiprocessor":
    "regsPerMultiprocessor", "cudaDevAttrTotalConstantMemory": "totalConstMem", "cudaDevAttrL2CacheSize":
    "l2CacheSize", "cudaDevAttrGlobalMemoryBusWidth": "memoryBusWidth", "cudaDevAttrAsyncEngineCount":
    "asyncEngineCount", "cudaDevAttrConcurrentKernels": "concurrentKernels", "cudaDevAttrUnifiedAddressing":
    "unifiedAddressing", "cudaDevAttrEccEnabled": "ECCEnabled", "cudaDevAttrPciDomainId": "pciDomainID",
    "cudaDevAttrPciBusId": "pciBusID", "cudaDevAttrPciDeviceId": "pciDeviceID",
    "cudaDevAttrComputeCapabilityMajor": "major", "cudaDevAttrComputeCapabilityMinor": "minor",
    # clockRate, memoryClockRate, computeMode, kernelExecTimeoutEnabled: gone from CUDA 13's struct,
    # so this CuPy dict lacks them and the reader must ask deviceGetAttribute
}


def _recording(name: str) -> list[dict[int, int]]:
    document = json.loads((DATA / "device_query" / name).read_text())
    return [{int(k): entry["value"] for k, entry in device.items()} for device in document["devices"]]


class FakeCudart:
    """libcudart as ctypes sees it: each call fills the int its first argument points to, returns 0."""

    def __init__(self, devices: list[dict[int, int]], prefix: str = "cuda"):
        self.devices, self.asked = devices, []
        setattr(self, f"{prefix}GetDeviceCount", self._count)
        setattr(self, f"{prefix}DeviceGetAttribute", self._attribute)

    def _count(self, pointer) -> int:
        pointer._obj.value = len(self.devices)
        return 0

    def _attribute(self, pointer, attribute: int, device: int) -> int:
        self.asked.append(attribute)
        if attribute not in self.devices[device]:
            return 1  # cudaErrorInvalidValue: an id this runtime does not know
        pointer._obj.value = self.devices[device][attribute]
        return 0


class FakeCupyRuntime:
    def __init__(self, devices: list[dict[int, int]]):
        self.devices, self.by_id = [], devices
        names = {int(k): e["name"] for k, e in json.loads(
            (DATA / "device_query" / "h200_sxm_datasheet.json").read_text())["devices"][0].items()}
        for device in devices:
            props = {CUPY_KEYS[names[i]]: v for i, v in device.items() if names[i] in CUPY_KEYS}
            props["maxThreadsDim"] = (device[2], device[3], device[4])
            props["maxGridSize"] = (device[5], device[6], device[7])
            self.devices.append(props)

    def getDeviceCount(self):  # noqa: N802 - CuPy's name
        return len(self.devices)

    def getDeviceProperties(self, index):  # noqa: N802
        return dict(self.devices[index])

    def deviceGetAttribute(self, attribute, index):  # noqa: N802
        return self.by_id[index][attribute]


def _cudart_source(devices) -> CtypesSource:
    return CtypesSource(FakeCudart(devices), "libcudart.so.12 (cudaDeviceGetAttribute)", "cudaGetDeviceCount",
                        "cudaDeviceGetAttribute", "cuda_ids")


def test_ctypes_replay_of_an_h200_gives_every_field():
    devices, problems = read_devices(_cudart_source(_recording("h200_sxm_datasheet.json")))
    assert problems == []
    assert devices[0] == H200
    assert devices[1]["pci_bus_id"] == "0000:2a:00.0"


def test_cupy_replay_reads_its_dict_and_asks_by_id_for_what_cuda_13_removed():
    runtime = FakeCupyRuntime(_recording("h200_sxm_datasheet.json"))
    devices, problems = read_devices(CupySource(runtime, "13.3.0"))
    assert problems == [] and devices[0] == H200
    assert "clockRate" not in runtime.getDeviceProperties(0)  # so the 1980 MHz came from deviceGetAttribute


def test_an_attribute_the_runtime_refuses_is_named_not_guessed():
    recording = _recording("h200_sxm_datasheet.json")
    del recording[0][97]  # an older runtime without the opt-in shared memory id
    devices, problems = read_devices(_cudart_source(recording))
    assert "shared_memory_per_block_optin_bytes" not in devices[0]
    assert len(problems) == 1 and "shared_memory_per_block_optin_bytes" in problems[0] and "error 1" in problems[0]


def test_nvidia_probe_attaches_the_query_by_pci_address_and_says_why_where_it_cannot():
    recording = json.loads((DATA / "nvml" / "h200.json").read_text())
    source = _cudart_source(_recording("h200_sxm_datasheet.json"))
    devices = nvidia.probe(RecordedNvml(recording), environ={}, runtime=lambda: source)
    assert devices[0].properties["device_query"] == H200
    assert devices[1].properties["device_query"]["pci_bus_id"] == "0000:2a:00.0"
    assert devices[0].properties["device_query_source"] == "libcudart.so.12 (cudaDeviceGetAttribute)"
    # the recording has four boards, the runtime lists two: the others say why, with no made-up numbers
    assert "device_query" not in devices[2].properties
    assert devices[2].properties["device_query_source"].startswith("unavailable: ")


def test_no_runtime_is_a_reason_not_a_failure():
    def nothing():
        raise QueryError("no CUDA runtime to ask")
    devices = nvidia.probe(RecordedNvml(json.loads((DATA / "nvml" / "h200.json").read_text())), environ={},
                           runtime=nothing)
    assert devices and all(d.properties["device_query_source"] == "unavailable: no CUDA runtime to ask"
                           for d in devices)
    assert "device_query_source" not in nvml_devices("h200")[0].properties  # a replay asks no real runtime


def test_loader_prefers_cupy_then_cudart_then_the_driver_library():
    def no_modules(name):
        raise ImportError(name)

    opened = []

    def only(*names):
        def opener(name):
            opened.append(name)
            if name in names:
                return FakeCudart([])
            raise OSError(name)
        return opener
    assert isinstance(device_query_load.cuda_source(lambda n: object()), CupySource)
    assert "cudaDeviceGetAttribute" in device_query_load.cuda_source(no_modules, only("libcudart.so.12")).label
    assert "cuDeviceGetAttribute" in device_query_load.cuda_source(no_modules, only("libcuda.so.1")).label
    with pytest.raises(QueryError, match="neither libcudart nor libcuda"):
        device_query_load.cuda_source(no_modules, only())


def test_hip_replay_of_an_mi250x_gcd():
    recording = json.loads((DATA / "amd" / "mi250x_amdsmi.json").read_text())
    hip = CtypesSource(FakeCudart(_recording("mi250x_gcd_datasheet.json"), prefix="hip"),
                       "libamdhip64.so (hipDeviceGetAttribute)", "hipGetDeviceCount", "hipDeviceGetAttribute",
                       "hip_ids")
    devices = amd.probe(RecordedAmdsmi(recording), environ={}, runtime=lambda: hip)
    query = devices[0].properties["device_query"]
    assert query["warp_size"] == 64 and query["multiprocessor_count"] == 110
    assert query["l2_cache_bytes"] == 8 * 2**20 and query["sm_clock_mhz"] == 1700.0
    assert query["pci_bus_id"] == "0000:c1:00.0" and set(query) == set(H200)


def test_info_json_with_the_query_validates_and_the_schema_misses_no_field():
    jsonschema = pytest.importorskip("jsonschema")
    source = _cudart_source(_recording("h200_sxm_datasheet.json"))
    device = nvidia.probe(RecordedNvml(json.loads((DATA / "nvml" / "h200.json").read_text())), environ={},
                          runtime=lambda: source)[0]
    schema = load_schema("info")
    validator = {**schema["$defs"]["device"], "$defs": schema["$defs"]}
    jsonschema.validate(json.loads(json.dumps(device.to_dict())), validator)
    assert set(schema["$defs"]["device_query"]["properties"]) == set(H200)
    # a refused attribute is left out (and named in device_query_problems); a wrong type or an
    # unknown field is not accepted
    for key, value in (("warp_size", "32"), ("warp_sise", 32), ("max_block_dimensions", [1024, 1024]),
                       ("compute_capability", "nine")):
        broken = device.to_dict()
        broken["properties"]["device_query"][key] = value
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, validator)


def test_info_shows_every_field_within_80_columns():
    source = _cudart_source(_recording("h200_sxm_datasheet.json"))
    device = nvidia.probe(RecordedNvml(json.loads((DATA / "nvml" / "h200.json").read_text())), environ={},
                          runtime=lambda: source)[0]
    out = io.StringIO()
    Console(file=out, width=80, highlight=False).print(_device_table(device))
    text = out.getvalue()
    section = text[text.index("deviceQuery"):]
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80
    for shown in ("cc 9.0", "132 SMs", "clock 1,980 MHz", "warp 32", "1,024/block", "2,048/SM", "32 blocks/SM",
                  "1024×1024×64", "grid 2147483647×65535×65535", "48.0 KiB/block", "227 KiB opt-in",
                  "228 KiB/SM", "65,536/block · 65,536/SM", "3,201 MHz × 6,144 bit", "L2 60.0 MiB",
                  "const 64.0 KiB", "3 copy", "concurrent kernels yes", "unified addr yes", "compute default",
                  "time limit no", "ECC yes", "0000:18:00.0", "libcudart.so.12"):
        assert shown in section, shown
    assert "Device query" not in text  # the nested dict is not also dumped as a generic property row


# A real H100 SXM5: tests/data/device_query/h100_sxm_captured.json, transcribed from a published capture of
# NVIDIA's deviceQuery sample (its "description" and "capture" name the page and commit). What that output
# prints, written out by hand from its lines, not read from the fixture:
H100_CAPTURED = {
    "compute_capability": "9.0", "multiprocessor_count": 132, "warp_size": 32, "max_threads_per_block": 1024,
    "max_threads_per_multiprocessor": 2048, "max_block_dimensions": [1024, 1024, 64],
    "max_grid_dimensions": [2147483647, 65535, 65535], "shared_memory_per_block_bytes": 49152,
    "shared_memory_per_multiprocessor_bytes": 233472, "registers_per_block": 65536,
    "total_constant_memory_bytes": 65536, "l2_cache_bytes": 52428800, "sm_clock_mhz": 1980.0,
    "memory_clock_mhz": 2619.0, "memory_bus_width_bits": 5120, "async_engine_count": 3, "unified_addressing": True,
    "kernel_exec_timeout": False, "ecc_enabled": True, "compute_mode": "default", "pci_bus_id": "0000:53:00.0",
}
# deviceQuery does not print these: the replay refuses them, as a runtime that lacks the id would
NOT_CAPTURED = {"max_blocks_per_multiprocessor", "shared_memory_per_block_optin_bytes", "registers_per_multiprocessor",
                "concurrent_kernels"}

# enum cudaDeviceAttr (CUDA's driver_types.h), and the attributes each field must be read from
CUDA_ATTR = {
    "cudaDevAttrMaxThreadsPerBlock": 1, "cudaDevAttrMaxBlockDimX": 2, "cudaDevAttrMaxBlockDimY": 3,
    "cudaDevAttrMaxBlockDimZ": 4, "cudaDevAttrMaxGridDimX": 5, "cudaDevAttrMaxGridDimY": 6, "cudaDevAttrMaxGridDimZ": 7,
    "cudaDevAttrMaxSharedMemoryPerBlock": 8, "cudaDevAttrTotalConstantMemory": 9, "cudaDevAttrWarpSize": 10,
    "cudaDevAttrMaxRegistersPerBlock": 12, "cudaDevAttrClockRate": 13, "cudaDevAttrMultiProcessorCount": 16,
    "cudaDevAttrKernelExecTimeout": 17, "cudaDevAttrComputeMode": 20, "cudaDevAttrConcurrentKernels": 31,
    "cudaDevAttrEccEnabled": 32, "cudaDevAttrPciBusId": 33, "cudaDevAttrPciDeviceId": 34,
    "cudaDevAttrMemoryClockRate": 36, "cudaDevAttrGlobalMemoryBusWidth": 37, "cudaDevAttrL2CacheSize": 38,
    "cudaDevAttrMaxThreadsPerMultiProcessor": 39, "cudaDevAttrAsyncEngineCount": 40,
    "cudaDevAttrUnifiedAddressing": 41, "cudaDevAttrPciDomainId": 50, "cudaDevAttrComputeCapabilityMajor": 75,
    "cudaDevAttrComputeCapabilityMinor": 76, "cudaDevAttrMaxSharedMemoryPerMultiprocessor": 81,
    "cudaDevAttrMaxRegistersPerMultiprocessor": 82, "cudaDevAttrMaxSharedMemoryPerBlockOptin": 97,
    "cudaDevAttrMaxBlocksPerMultiprocessor": 106,
}
FIELD_ATTRS = {
    "compute_capability": ("cudaDevAttrComputeCapabilityMajor", "cudaDevAttrComputeCapabilityMinor"),
    "multiprocessor_count": ("cudaDevAttrMultiProcessorCount",), "warp_size": ("cudaDevAttrWarpSize",),
    "max_threads_per_block": ("cudaDevAttrMaxThreadsPerBlock",),
    "max_threads_per_multiprocessor": ("cudaDevAttrMaxThreadsPerMultiProcessor",),
    "max_blocks_per_multiprocessor": ("cudaDevAttrMaxBlocksPerMultiprocessor",),
    "max_block_dimensions": ("cudaDevAttrMaxBlockDimX", "cudaDevAttrMaxBlockDimY", "cudaDevAttrMaxBlockDimZ"),
    "max_grid_dimensions": ("cudaDevAttrMaxGridDimX", "cudaDevAttrMaxGridDimY", "cudaDevAttrMaxGridDimZ"),
    "shared_memory_per_block_bytes": ("cudaDevAttrMaxSharedMemoryPerBlock",),
    "shared_memory_per_block_optin_bytes": ("cudaDevAttrMaxSharedMemoryPerBlockOptin",),
    "shared_memory_per_multiprocessor_bytes": ("cudaDevAttrMaxSharedMemoryPerMultiprocessor",),
    "registers_per_block": ("cudaDevAttrMaxRegistersPerBlock",),
    "registers_per_multiprocessor": ("cudaDevAttrMaxRegistersPerMultiprocessor",),
    "total_constant_memory_bytes": ("cudaDevAttrTotalConstantMemory",), "l2_cache_bytes": ("cudaDevAttrL2CacheSize",),
    "sm_clock_mhz": ("cudaDevAttrClockRate",), "memory_clock_mhz": ("cudaDevAttrMemoryClockRate",),
    "memory_bus_width_bits": ("cudaDevAttrGlobalMemoryBusWidth",),
    "async_engine_count": ("cudaDevAttrAsyncEngineCount",), "concurrent_kernels": ("cudaDevAttrConcurrentKernels",),
    "unified_addressing": ("cudaDevAttrUnifiedAddressing",), "kernel_exec_timeout": ("cudaDevAttrKernelExecTimeout",),
    "ecc_enabled": ("cudaDevAttrEccEnabled",), "compute_mode": ("cudaDevAttrComputeMode",),
    "pci_bus_id": ("cudaDevAttrPciDomainId", "cudaDevAttrPciBusId", "cudaDevAttrPciDeviceId"),
}
FLAG_ATTRS = {"cudaDevAttrConcurrentKernels", "cudaDevAttrUnifiedAddressing", "cudaDevAttrKernelExecTimeout",
              "cudaDevAttrEccEnabled"}
CAPTURED = "h100_sxm_captured.json"


def _captured_h100_device():
    """The capture's GPU 0 as NVML lists it (name and bus from the same page's nvidia-smi), with the replay attached
    by PCI address: the step nvidia.probe ends with."""
    device = Device(id="cuda:0", kind="gpu", vendor="NVIDIA", name="NVIDIA H100 80GB HBM3", source="nvml",
                    properties={"pci_bus_id": "0000:53:00.0"})
    source = _cudart_source(_recording(CAPTURED))
    return device_query_load.with_device_query([device], lambda: source)[0]


def test_the_captured_fixture_uses_cudas_attribute_numbers_and_says_what_the_capture_lacks():
    document = json.loads((DATA / "device_query" / CAPTURED).read_text())
    assert document["capture"]["url"] in document["description"]
    entries = document["devices"][0]
    assert all(CUDA_ATTR[entry["name"]] == int(key) for key, entry in entries.items())
    assert all(entry["source"].startswith("deviceQuery line '") for entry in entries.values())
    absent = {int(key) for key in document["not_in_capture"]}
    assert absent == {CUDA_ATTR[name] for key in NOT_CAPTURED for name in FIELD_ATTRS[key]}
    assert absent.isdisjoint(int(key) for key in entries)
    assert {int(key) for key in entries} | absent == set(CUDA_ATTR.values())


def test_ctypes_replay_of_a_captured_h100_gives_what_its_deviceQuery_printed():
    devices, problems = read_devices(_cudart_source(_recording(CAPTURED)))
    assert devices == [H100_CAPTURED]
    assert sorted(p.split()[2].rstrip(":") for p in problems) == sorted(NOT_CAPTURED)
    assert all(p.startswith("device 0 ") and "error 1" in p for p in problems)


def test_cupy_replay_of_a_captured_h100_gives_what_its_deviceQuery_printed():
    devices, problems = read_devices(CupySource(FakeCupyRuntime(_recording(CAPTURED)), "13.3.0"))
    assert devices == [H100_CAPTURED]
    assert sorted(p.split()[2].rstrip(":") for p in problems) == sorted(NOT_CAPTURED)


@pytest.mark.parametrize("name", sorted(n for k, names in FIELD_ATTRS.items() if k not in NOT_CAPTURED for n in names))
def test_each_captured_attribute_lands_in_its_own_field(name):
    """Many captured values coincide (65536, 1024, 0): move one attribute's value and only its field may move."""
    recording = _recording(CAPTURED)
    before, _ = read_devices(_cudart_source(recording))
    attr = CUDA_ATTR[name]
    recording[0][attr] = 1 - recording[0][attr] if name in FLAG_ATTRS else recording[0][attr] + 1
    after, _ = read_devices(_cudart_source(recording))
    changed = {key for key in H100_CAPTURED if before[0][key] != after[0][key]}
    assert changed == {key for key, names in FIELD_ATTRS.items() if name in names}


def test_info_shows_the_captured_h100_and_json_carries_its_values():
    device = _captured_h100_device()
    data = json.loads(json.dumps(device.to_dict()))["properties"]
    assert data["device_query"] == H100_CAPTURED
    assert data["device_query_source"] == "libcudart.so.12 (cudaDeviceGetAttribute)"
    assert sorted(p.split()[2].rstrip(":") for p in data["device_query_problems"]) == sorted(NOT_CAPTURED)
    out = io.StringIO()
    Console(file=out, width=80, highlight=False).print(_device_table(device))
    section = out.getvalue()[out.getvalue().index("deviceQuery"):]
    for shown in ("cc 9.0", "132 SMs", "clock 1,980 MHz", "warp 32", "1,024/block", "2,048/SM", "? blocks/SM",
                  "1024×1024×64", "grid 2147483647×65535×65535", "48.0 KiB/block", "? opt-in", "228 KiB/SM",
                  "65,536/block · ?/SM", "2,619 MHz × 5,120 bit", "L2 50.0 MiB", "const 64.0 KiB", "3 copy",
                  "concurrent kernels ?", "unified addr yes", "compute default", "time limit no", "ECC yes",
                  "0000:53:00.0"):
        assert shown in section, shown
    assert section.count("unread") == len(NOT_CAPTURED)


def test_info_json_of_a_partly_answered_query_validates_and_names_what_is_missing():
    jsonschema = pytest.importorskip("jsonschema")
    schema = load_schema("info")
    document = json.loads(json.dumps(_captured_h100_device().to_dict()))
    jsonschema.validate(document, {**schema["$defs"]["device"], "$defs": schema["$defs"]})
    properties = document["properties"]
    missing = set(schema["$defs"]["device_query"]["properties"]) - set(properties["device_query"])
    assert missing and all(any(name in problem for problem in properties["device_query_problems"]) for name in missing)
