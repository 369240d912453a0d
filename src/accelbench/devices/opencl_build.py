"""Whether an OpenCL device's compiler can build a trivial kernel, and if not, why in a user's words.

A device can be listed by its driver and still be unusable: the PoCL bundled with the pyopencl
wheel (pocl-binary-distribution 3.0) cannot compile for AMD Zen 5 ("unknown target CPU
'generic'"), so every kernel fails. Each device is tried once per process; the answer is kept.
pyopencl is imported only when a real device is tried.
"""
from __future__ import annotations

import re
from typing import Any

TRIVIAL_KERNEL = "__kernel void accelbench_probe(__global float *x) { x[get_global_id(0)] += 1.0f; }"
POCL_FIX = "install Debian's pocl-opencl-icd or a newer PoCL"

_answers: dict[Any, str | None] = {}  # device key -> why it cannot build (None: it can)


def build_failure(cl_device: Any) -> str | None:
    """Why `cl_device` (a pyopencl Device) cannot build a kernel, or None when it can."""
    key = _key(cl_device)
    if key not in _answers:
        _answers[key] = _try_build(cl_device)
    return _answers[key]


def _key(cl_device: Any) -> Any:
    pointer = getattr(cl_device, "int_ptr", None)
    return pointer if pointer is not None else id(cl_device)


def _try_build(cl_device: Any) -> str | None:
    import pyopencl as cl

    try:
        context = cl.Context([cl_device])
        cl.Program(context, TRIVIAL_KERNEL).build()
    except Exception as error:  # noqa: BLE001 - BUILD_PROGRAM_FAILURE, a context the driver refuses, ...
        platform = getattr(cl_device, "platform", None)
        return explain(str(error), _text(platform, "name"), _text(platform, "version"))
    return None


def explain(message: str, platform_name: str, platform_version: str, wheel_pocl_version: str | None = None) -> str:
    """The build log turned into a reason with its fix (`wheel_pocl_version`: for tests)."""
    error_lines = [line.strip() for line in message.splitlines() if line.strip().startswith("error:")]
    first = (error_lines or [line.strip() for line in message.splitlines() if line.strip()] or ["no message"])[0]
    first = first.removeprefix("error:").strip()
    if "pocl" not in f"{platform_name} {platform_version}".lower() and "portable computing" not in platform_name.lower():
        return f"its OpenCL compiler cannot build a trivial kernel ({first}): update the device's OpenCL driver"
    which = _which_pocl(platform_version, wheel_pocl_version)
    target = re.search(r"unknown target CPU '([^']*)'", message)
    if target:
        return f"{which} cannot compile for this CPU (LLVM: unknown target CPU '{target.group(1)}'): {POCL_FIX}"
    return f"{which} cannot build a trivial kernel ({first}): {POCL_FIX}"


def _which_pocl(platform_version: str, wheel_pocl_version: str | None) -> str:
    """"the PoCL in the pyopencl wheel" when the platform is pocl-binary-distribution's version."""
    found = re.search(r"PoCL\s+(\S+)", platform_version)
    version = found.group(1) if found else ""
    if wheel_pocl_version is None:
        from accelbench.devices.frameworks import version as installed_version

        wheel_pocl_version = installed_version("pocl_binary_distribution")
    if wheel_pocl_version and version.startswith(wheel_pocl_version) and "debian" not in version.lower():
        return "the PoCL in the pyopencl wheel"
    return f"PoCL {version}".strip()


def _text(obj: Any, attr: str) -> str:
    try:
        return str(getattr(obj, attr)).strip()
    except Exception:  # noqa: BLE001 - a driver that cannot say its name still gets a reason
        return ""


def forget() -> None:
    """Forget the answers (for tests)."""
    _answers.clear()
