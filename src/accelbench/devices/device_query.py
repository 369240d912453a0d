"""deviceQuery: a GPU's execution limits (warps, blocks, shared memory, registers, engines) as its runtime reports them.

Read attribute by attribute id (cudaDeviceGetAttribute, hipDeviceGetAttribute), not through the
cudaDeviceProp struct: the struct's layout changes between CUDA versions (CUDA 13 removed clockRate
and computeMode from it), the ids do not. Three sources, the first that answers wins: CuPy's runtime
API (its getDeviceProperties dict, deviceGetAttribute for what the dict lacks), libcudart through
ctypes, libcuda (the driver API, shipped with every driver; its CUdevice_attribute numbers are the
runtime's). AMD: libamdhip64's hipDeviceGetAttribute. Loading these libraries initialises the driver,
which can abort or hang: callers run them only inside the isolated probe child (devices/isolated.py).

Attribute ids: CUDA's driver_types.h (enum cudaDeviceAttr) and HIP's hip_runtime_api.h
(enum hipDeviceAttribute_t, the ROCm 5+ numbering).
"""
from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

COMPUTE_MODES = {0: "default", 1: "exclusive_thread", 2: "prohibited", 3: "exclusive_process"}


class QueryError(Exception):
    """A runtime call failed; `code` is its error number where it gave one."""

    def __init__(self, message: str, code: int | None = None):
        super().__init__(message)
        self.code = code


def _first(values: Sequence[int]) -> int:
    return int(values[0])


def _khz_to_mhz(values: Sequence[int]) -> float:
    return values[0] / 1000


def _flag(values: Sequence[int]) -> bool:
    return bool(values[0])


def _listed(values: Sequence[int]) -> list[int]:
    return [int(v) for v in values]


def _capability(values: Sequence[int]) -> str:
    return f"{values[0]}.{values[1]}"


def _pci_address(values: Sequence[int]) -> str:
    domain, bus, device = values
    return f"{domain:04x}:{bus:02x}:{device:02x}.0"


def _compute_mode(values: Sequence[int]) -> str:
    return COMPUTE_MODES.get(int(values[0]), f"unknown ({values[0]})")


@dataclass(frozen=True)
class QueryField:
    """One deviceQuery line: accelbench's name (unit suffix), the attribute ids behind it, its shape."""

    key: str
    cuda_ids: tuple[int, ...]
    hip_ids: tuple[int, ...]
    cupy_keys: tuple[str, ...]   # getDeviceProperties() keys; one key may hold a 3-tuple
    shape: Callable[[Sequence[int]], Any] = _first


FIELDS: tuple[QueryField, ...] = (
    QueryField("compute_capability", (75, 76), (23, 61), ("major", "minor"), _capability),
    QueryField("multiprocessor_count", (16,), (63,), ("multiProcessorCount",)),
    QueryField("warp_size", (10,), (87,), ("warpSize",)),
    QueryField("max_threads_per_block", (1,), (56,), ("maxThreadsPerBlock",)),
    QueryField("max_threads_per_multiprocessor", (39,), (57,), ("maxThreadsPerMultiProcessor",)),
    QueryField("max_blocks_per_multiprocessor", (106,), (25,), ("maxBlocksPerMultiProcessor",)),
    QueryField("max_block_dimensions", (2, 3, 4), (26, 27, 28), ("maxThreadsDim",), _listed),
    QueryField("max_grid_dimensions", (5, 6, 7), (29, 30, 31), ("maxGridSize",), _listed),
    QueryField("shared_memory_per_block_bytes", (8,), (74,), ("sharedMemPerBlock",)),
    QueryField("shared_memory_per_block_optin_bytes", (97,), (75,), ("sharedMemPerBlockOptin",)),
    QueryField("shared_memory_per_multiprocessor_bytes", (81,), (76,), ("sharedMemPerMultiprocessor",)),
    QueryField("registers_per_block", (12,), (71,), ("regsPerBlock",)),
    QueryField("registers_per_multiprocessor", (82,), (72,), ("regsPerMultiprocessor",)),
    QueryField("total_constant_memory_bytes", (9,), (83,), ("totalConstMem",)),
    QueryField("l2_cache_bytes", (38,), (19,), ("l2CacheSize",)),
    QueryField("sm_clock_mhz", (13,), (5,), ("clockRate",), _khz_to_mhz),
    QueryField("memory_clock_mhz", (36,), (60,), ("memoryClockRate",), _khz_to_mhz),
    QueryField("memory_bus_width_bits", (37,), (59,), ("memoryBusWidth",)),
    QueryField("async_engine_count", (40,), (2,), ("asyncEngineCount",)),
    QueryField("concurrent_kernels", (31,), (8,), ("concurrentKernels",), _flag),
    QueryField("unified_addressing", (41,), (85,), ("unifiedAddressing",), _flag),
    QueryField("kernel_exec_timeout", (17,), (18,), ("kernelExecTimeoutEnabled",), _flag),
    QueryField("ecc_enabled", (32,), (0,), ("ECCEnabled",), _flag),
    QueryField("compute_mode", (20,), (6,), ("computeMode",), _compute_mode),
    QueryField("pci_bus_id", (50, 33, 34), (69, 67, 68), ("pciDomainID", "pciBusID", "pciDeviceID"), _pci_address),
)
FIELD_KEYS = tuple(f.key for f in FIELDS)


class AttributeSource(Protocol):
    """A runtime that answers attribute queries; `label` names it in the inventory."""

    label: str

    def device_count(self) -> int: ...
    def values(self, field: QueryField, index: int) -> list[int]: ...


class CupySource:
    """CuPy's runtime module: getDeviceProperties where its dict has the key, else deviceGetAttribute."""

    def __init__(self, runtime: Any, version: str = ""):
        self._runtime = runtime
        self._properties: dict[int, dict[str, Any]] = {}
        self.label = f"CuPy {version} runtime API".replace("  ", " ")

    def device_count(self) -> int:
        return int(self._call(self._runtime.getDeviceCount))

    def values(self, field: QueryField, index: int) -> list[int]:
        if index not in self._properties:
            self._properties[index] = dict(self._call(self._runtime.getDeviceProperties, index))
        found: list[Any] = [self._properties[index].get(key) for key in field.cupy_keys]
        if len(found) == 1 and isinstance(found[0], (tuple, list)):
            found = list(found[0])
        present = [int(v) for v in found if v is not None]
        if len(present) == len(field.cuda_ids):
            return present
        # CUDA 13's cudaDeviceProp lacks clockRate, computeMode, ...: ask by id
        return [int(self._call(self._runtime.deviceGetAttribute, attr, index)) for attr in field.cuda_ids]

    @staticmethod
    def _call(fn: Callable[..., Any], *args: Any) -> Any:
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001 - CuPy raises its CUDARuntimeError; any failure ends the query
            raise QueryError(f"CuPy: {exc}") from exc


class CtypesSource:
    """A C library with `count(int*)` and `attribute(int* value, int attr, int device)` (cudart, HIP, driver API)."""

    def __init__(self, library: Any, label: str, count: str, attribute: str, ids: str,
                 device_handle: str | None = None, init: str | None = None):
        self._lib, self.label = library, label
        self._count, self._attribute, self._ids, self._handle = count, attribute, ids, device_handle
        self._init = init

    def _check(self, name: str, status: int) -> None:
        if status != 0:
            raise QueryError(f"{self.label}: {name} returned error {status}", status)

    def device_count(self) -> int:
        if self._init:  # the driver API answers nothing before cuInit
            self._check(self._init, getattr(self._lib, self._init)(0))
        count = ctypes.c_int(0)
        self._check(self._count, getattr(self._lib, self._count)(ctypes.byref(count)))
        return count.value

    def values(self, field: QueryField, index: int) -> list[int]:
        device = index
        if self._handle:  # the driver API numbers devices by handle, not ordinal
            handle = ctypes.c_int(0)
            self._check(self._handle, getattr(self._lib, self._handle)(ctypes.byref(handle), index))
            device = handle.value
        out = []
        for attr in getattr(field, self._ids):
            value = ctypes.c_int(0)
            self._check(self._attribute, getattr(self._lib, self._attribute)(ctypes.byref(value), attr, device))
            out.append(value.value)
        return out


def read_devices(source: AttributeSource) -> tuple[list[dict[str, Any]], list[str]]:
    """Each device's fields (keyed by FIELDS' names, in runtime order) and what could not be read."""
    problems: list[str] = []
    devices = []
    for index in range(source.device_count()):
        fields: dict[str, Any] = {}
        for field in FIELDS:
            try:
                fields[field.key] = field.shape(source.values(field, index))
            except QueryError as exc:
                problems.append(f"device {index} {field.key}: {exc}")
        devices.append(fields)
    return devices, problems


def by_pci_bus_id(devices: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The queried devices keyed by PCI address, the key NVML, amdsmi and sysfs give too."""
    return {d["pci_bus_id"]: d for d in devices if d.get("pci_bus_id")}
