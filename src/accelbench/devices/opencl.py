"""The OpenCL probe: every platform and device pyopencl can see, with limits, extensions and versions.

The probe reads duck-typed platform objects (`.name`, `.vendor`, `.version`, `.get_devices()`; devices
with pyopencl's attribute names). The real adapter is pyopencl itself, imported inside
`_pyopencl_platforms`; `RecordedPlatform` replays a recording (`record()` makes one), so tests and
tests/data need no OpenCL driver. One platform or device that raises while being read is skipped
with a warning on the devices that were listed; it never hides the others.

Ids are `opencl:P:D`, in the order the ICD loader returns platforms and devices; the pyopencl backend
enumerates the same way, so both name a device alike.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Iterable

from accelbench.devices.model import ERROR, NO_DRIVER, NOT_INSTALLED, Device, PeakFigure
from accelbench.devices.probing import ProbeFailure

NOT_INSTALLED_MESSAGE = "pyopencl is not installed: pip install accelbench[opencl]"
NO_PLATFORM_MESSAGE = (
    "no OpenCL platform: the ICD loader (libOpenCL.so) found no driver registered in "
    "/etc/OpenCL/vendors; install a vendor driver, or `pip install pocl-binary-distribution` "
    "for a CPU device"
)
PLATFORM_NOT_FOUND_KHR = -1001

# cl_device_type bits (OpenCL spec values, so nothing is imported to read them)
DEVICE_TYPE_CPU, DEVICE_TYPE_GPU, DEVICE_TYPE_ACCELERATOR, DEVICE_TYPE_CUSTOM = 2, 4, 8, 16
LOCAL_MEMORY_TYPES = {1: "local", 2: "global"}  # "global": local memory emulated in global memory

# accelbench property name -> pyopencl attribute, read one by one so one failure costs one field
_PROPERTIES = (
    ("compute_units", "max_compute_units"),
    ("max_clock_mhz", "max_clock_frequency"),
    ("global_memory_bytes", "global_mem_size"),
    ("local_memory_bytes", "local_mem_size"),
    ("max_alloc_bytes", "max_mem_alloc_size"),
    ("max_constant_buffer_bytes", "max_constant_buffer_size"),
    ("global_cache_bytes", "global_mem_cache_size"),
    ("max_work_group_size", "max_work_group_size"),
    ("max_work_item_sizes", "max_work_item_sizes"),
    ("preferred_vector_width_float", "preferred_vector_width_float"),
    ("address_bits", "address_bits"),
    ("host_unified_memory", "host_unified_memory"),
    ("driver_version", "driver_version"),
    ("opencl_version", "version"),
    ("opencl_c_version", "opencl_c_version"),
)
# absent by design on devices without the extension: a failed read is no warning
_QUIET = ("double_fp_config", "half_fp_config", "compute_capability_major_nv",
          "compute_capability_minor_nv", "local_mem_type")

# FP32 lanes per streaming multiprocessor by compute capability (CUDA's own SM-to-cores table)
_NVIDIA_FP32_LANES_PER_SM = {
    (3, 0): 192, (3, 5): 192, (3, 7): 192, (5, 0): 128, (5, 2): 128, (5, 3): 128,
    (6, 0): 64, (6, 1): 128, (6, 2): 128, (7, 0): 64, (7, 2): 64, (7, 5): 64,
    (8, 0): 64, (8, 6): 128, (8, 7): 128, (8, 9): 128, (9, 0): 128, (10, 0): 128, (10, 1): 128,
    (12, 0): 128,
}


def probe(platforms: Iterable[Any] | None = None, build_check: Callable[[Any], str | None] | None = None) -> list[Device]:
    """Devices on every platform; `platforms` replays recorded ones instead of asking pyopencl.

    `build_check(cl_device)` says why a device cannot build a kernel (None: it can): by default a
    real build for real devices, and a recorded device's "build_failure" entry when replaying.
    """
    if build_check is None:
        build_check = _recorded_build_failure if platforms is not None else _real_build_failure
    if platforms is None and build_check is _real_build_failure:
        _start_build_child()  # it starts while the devices are listed here
    try:
        platforms = list(_pyopencl_platforms() if platforms is None else platforms)
    except BaseException:
        _stop_build_child()
        raise
    devices: list[Device] = []
    skipped: list[str] = []
    for p_index, platform in enumerate(platforms):
        try:
            platform_props = {
                "platform_index": p_index,
                "platform_name": _text(platform.name),
                "platform_vendor": _text(platform.vendor),
                "platform_version": _text(platform.version),
            }
            cl_devices = list(platform.get_devices())
        except Exception as exc:  # noqa: BLE001 - one broken platform must not hide the others
            skipped.append(f"OpenCL platform {p_index} skipped: {_describe(exc)}")
            continue
        for d_index, cl_device in enumerate(cl_devices):
            try:
                device = describe_device(cl_device, p_index, d_index, platform_props)
                devices.append(_unbuildable(device, build_check(cl_device)))
            except Exception as exc:  # noqa: BLE001
                name = platform_props["platform_name"]
                skipped.append(f"OpenCL device opencl:{p_index}:{d_index} on {name!r} skipped: {_describe(exc)}")
    if skipped and not devices:
        raise ProbeFailure(ERROR, "; ".join(skipped))
    if skipped:
        devices = [_with_warnings(d, skipped) for d in devices]
    return devices


def describe_device(cl_device: Any, p_index: int, d_index: int, platform_props: dict[str, Any]) -> Device:
    """One Device; name and type must read (they raise), every other field may be missing."""
    name = _text(cl_device.name)
    type_bits = int(cl_device.type)
    kind = device_kind(type_bits)
    warnings: list[str] = []
    props: dict[str, Any] = dict(platform_props, device_index=d_index, device_type=_type_name(type_bits))
    unread = []
    for prop, attr in _PROPERTIES:
        value, ok = _read(cl_device, attr)
        if not ok:
            unread.append(attr)
        props[prop] = _plain(value)
    extensions = sorted(set((_read(cl_device, "extensions")[0] or "").split()))
    props["extensions"] = extensions
    double_config = _read(cl_device, "double_fp_config")[0]
    props["fp64"] = bool(double_config) or "cl_khr_fp64" in extensions
    props["fp16"] = "cl_khr_fp16" in extensions
    props["local_memory_type"] = LOCAL_MEMORY_TYPES.get(_read(cl_device, "local_mem_type")[0])
    if "cl_nv_device_attribute_query" in extensions:
        major, minor = (_read(cl_device, f"compute_capability_{x}_nv")[0] for x in ("major", "minor"))
        props["compute_capability"] = f"{major}.{minor}" if major is not None else None
    if unread:
        warnings.append(f"could not read: {', '.join(unread)}")
    if props["host_unified_memory"] is not None:
        props["host_unified_memory"] = bool(props["host_unified_memory"])
    peaks, note = formula_peaks(kind, name, props)
    if note:
        props["peak_note"] = note
    return Device(
        id=f"opencl:{p_index}:{d_index}", kind=kind, vendor=_text(_read(cl_device, "vendor")[0]) or "unknown",
        name=name or "unknown OpenCL device", source="pyopencl", memory_bytes=props.get("global_memory_bytes"),
        properties=props, peaks=peaks, reach={"pyopencl": f"opencl:{p_index}:{d_index}"},
        warnings=tuple(warnings),
    )


def _unbuildable(device: Device, failure: str | None) -> Device:
    """Listed, but reached by no backend: a compiler that cannot build a kernel fails every spec."""
    if not failure:
        return device
    return replace(device, reach={}, properties={**device.properties, "kernel_build_failure": failure},
                   warnings=(*device.warnings, f"not measurable: {failure}"))


def _real_build_failure(cl_device: Any) -> str | None:
    from accelbench.devices.opencl_build import build_failure

    return build_failure(cl_device)


def _start_build_child() -> None:
    import importlib.util

    try:
        installed = importlib.util.find_spec("pyopencl") is not None  # else no build is ever tried
    except ValueError:  # a stand-in module (tests): nothing for a child to build with
        return
    if installed:
        from accelbench.devices.opencl_build import start_child

        start_child()


def _stop_build_child() -> None:
    import sys

    if "accelbench.devices.opencl_build" in sys.modules:
        sys.modules["accelbench.devices.opencl_build"].stop_child()


def _recorded_build_failure(cl_device: Any) -> str | None:
    return _read(cl_device, "build_failure")[0]


def device_kind(type_bits: int) -> str:
    if type_bits & DEVICE_TYPE_GPU:
        return "gpu"
    if type_bits & DEVICE_TYPE_CPU and not type_bits & (DEVICE_TYPE_ACCELERATOR | DEVICE_TYPE_CUSTOM):
        return "cpu"
    return "accelerator"


def formula_peaks(kind: str, name: str, props: dict[str, Any]) -> tuple[tuple[PeakFigure, ...], str | None]:
    """An fp32 formula peak where OpenCL's figures pin it down, else none and a note why.

    OpenCL reports compute units, not ALUs: lanes per unit come from the architecture, known here
    for NVIDIA (compute capability) and AMD GCN/CDNA1-2/RDNA1-2 (64 lanes a CU). Everything else,
    CPUs above all, gets no guess.
    """
    if kind == "cpu":
        return (), ("a CPU OpenCL device shares the host CPU's peak (see device 'cpu'); "
                    "its max_clock_mhz is the nominal clock, not a measured one")
    units, clock_mhz = props.get("compute_units"), props.get("max_clock_mhz")
    lanes, basis = _lanes_per_unit(name, props)
    if not lanes:
        return (), "no fp32 formula: OpenCL does not say how many lanes a compute unit has on this device"
    if not units or not clock_mhz:
        return (), "no fp32 formula: the compute units or the clock could not be read"
    value = units * lanes * 2 * clock_mhz * 1e6  # an FMA is two flops a lane a cycle
    detail = f"{units} compute units × {lanes} lanes ({basis}) × 2 FLOP/cycle × {clock_mhz / 1000:g} GHz"
    peak = PeakFigure("fp32", value, "formula", detail,
                      {"compute_units": units, "lanes_per_unit": lanes, "max_clock_mhz": clock_mhz})
    return (peak,), None


def _lanes_per_unit(name: str, props: dict[str, Any]) -> tuple[int | None, str]:
    capability = props.get("compute_capability")
    if capability:
        major, _, minor = capability.partition(".")
        key = (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None
        if key in _NVIDIA_FP32_LANES_PER_SM:
            return _NVIDIA_FP32_LANES_PER_SM[key], f"NVIDIA sm_{major}{minor}"
        return None, ""
    # AMD's OpenCL device name is the ISA: gfx90x = GCN5/CDNA1-2, gfx10xx = RDNA1-2, both 64 lanes
    # a CU. gfx11+ (dual issue) and gfx94x+ (packed FP32) double that only for some code: no peak.
    if name.startswith(("gfx90", "gfx10")):
        return 64, f"AMD {name.split(':')[0]}"
    return None, ""


def _pyopencl_platforms() -> list[Any]:
    """The real adapter: pyopencl's platforms, or a ProbeFailure saying why there are none."""
    try:
        import pyopencl as cl
    except ModuleNotFoundError as exc:
        if exc.name in (None, "pyopencl") or str(exc.name).startswith("pyopencl."):
            raise ProbeFailure(NOT_INSTALLED, NOT_INSTALLED_MESSAGE) from exc
        raise ProbeFailure(NOT_INSTALLED, f"{exc.name} (needed by pyopencl) is not installed") from exc
    except ImportError as exc:  # the extension module loads libOpenCL.so, the ICD loader
        raise ProbeFailure(NO_DRIVER, f"pyopencl could not load the OpenCL ICD loader: {exc}") from exc
    try:
        platforms = cl.get_platforms()
    except cl.Error as exc:
        if _error_code(exc) == PLATFORM_NOT_FOUND_KHR or "PLATFORM_NOT_FOUND" in str(exc):
            raise ProbeFailure(NO_DRIVER, NO_PLATFORM_MESSAGE) from exc
        raise
    if not platforms:
        raise ProbeFailure(NO_DRIVER, NO_PLATFORM_MESSAGE)
    return list(platforms)


# -- replaying recorded platforms ---------------------------------------------------------------

class _Recorded:
    """Attributes from a dict; a key "error" makes every read raise, as a broken driver does."""

    def __init__(self, data: dict[str, Any]):
        self._data = data

    def __getattr__(self, attr: str) -> Any:
        data = self.__dict__["_data"]
        if "error" in data:
            raise RuntimeError(data["error"])
        if attr not in data:
            raise AttributeError(attr)
        return data[attr]


class RecordedPlatform(_Recorded):
    """A platform from a recording: {"name", "vendor", "version", "devices": [{attr: value}]}."""

    def get_devices(self) -> list[_Recorded]:
        if "error" in self._data:
            raise RuntimeError(self._data["error"])
        return [_Recorded(d) for d in self._data.get("devices", [])]


def recorded_platforms(data: list[dict[str, Any]]) -> list[RecordedPlatform]:
    return [RecordedPlatform(p) for p in data]


def record(platforms: Iterable[Any] | None = None) -> list[dict[str, Any]]:
    """The live platforms as plain data (JSON-ready), for tests/data and bug reports."""
    attrs = ("name", "vendor", "type", "extensions", *(a for _, a in _PROPERTIES), *_QUIET)
    build_check = _recorded_build_failure if platforms is not None else _real_build_failure
    recorded = []
    for platform in (_pyopencl_platforms() if platforms is None else platforms):
        entry: dict[str, Any] = {k: _text(getattr(platform, k)) for k in ("name", "vendor", "version")}
        devices = []
        for cl_device in platform.get_devices():
            values = {a: _plain(_read(cl_device, a)[0]) for a in attrs}
            values["build_failure"] = build_check(cl_device)
            devices.append({a: v for a, v in values.items() if v is not None})
        entry["devices"] = devices
        recorded.append(entry)
    return recorded


# -- small readers ----------------------------------------------------------------------------

def _read(obj: Any, attr: str) -> tuple[Any, bool]:
    """(value or None, whether that outcome is acceptable: read, or quietly absent)."""
    try:
        return getattr(obj, attr), True
    except Exception:  # noqa: BLE001 - drivers raise anything from INVALID_VALUE to segfault-ish errors
        return None, attr in _QUIET


def _plain(value: Any) -> Any:
    """JSON-ready: lists for sequences, stripped text, ints for numpy or pyopencl numbers."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, bool) or value is None:
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        return str(value)


def _text(value: Any) -> str:
    return str(value).strip() if value is not None else ""


def _type_name(type_bits: int) -> str:
    names = [n for bit, n in ((DEVICE_TYPE_CPU, "cpu"), (DEVICE_TYPE_GPU, "gpu"),
                              (DEVICE_TYPE_ACCELERATOR, "accelerator"), (DEVICE_TYPE_CUSTOM, "custom"))
             if type_bits & bit]
    return "+".join(names) or f"type {type_bits}"


def _error_code(exc: BaseException) -> int | None:
    """pyopencl's error code (cl.Error.code), when there is one."""
    code = getattr(exc, "code", None)
    return code if isinstance(code, int) else None


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).strip() or 'no message'}"


def _with_warnings(device: Device, extra: list[str]) -> Device:
    return replace(device, warnings=(*device.warnings, *extra))
