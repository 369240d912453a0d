"""Whether an OpenCL device's compiler can build a trivial kernel, and if not, why in a user's words.

A device can be listed by its driver and still be unusable: the PoCL bundled with the pyopencl
wheel (pocl-binary-distribution 3.0) cannot compile for AMD Zen 5 ("unknown target CPU
'generic'"), so every kernel fails. Each device is tried once per process; the answer is kept.
pyopencl is imported only when a real device is tried.

The build runs in a child process with a time limit: LLVM aborts its whole process on an I/O
error (under `ulimit -f`, on a full disk: "LLVM ERROR: IO failure on output stream"), and that
abort must not take `accelbench info` or a numpy run down with it. One child tries every device,
once per process; its failure is the devices' reason ("the OpenCL probe aborted: ...").
"""
from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from typing import Any

TRIVIAL_KERNEL = "__kernel void accelbench_probe(__global float *x) { x[get_global_id(0)] += 1.0f; }"
POCL_FIX = "install Debian's pocl-opencl-icd or a newer PoCL"

CHILD_TIMEOUT_S = 60.0  # a trivial kernel builds in well under a second; a hung driver does not

_answers: dict[Any, str | None] = {}  # device key -> why it cannot build (None: it can)
_child_answers: list[dict[str, str | None] | str] = []  # the child's answers, or why it failed
_child: list[subprocess.Popen] = []  # started, not yet read


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
    """The child's answer for `cl_device` (found by its platform and device index)."""
    import pyopencl as cl

    if not _child_answers:
        _child_answers.append(_ask_child())
    answers = _child_answers[0]
    if isinstance(answers, str):
        return answers
    try:
        platform = cl_device.platform
        p_index = cl.get_platforms().index(platform)
        d_index = platform.get_devices().index(cl_device)
    except Exception as error:  # noqa: BLE001 - a device the driver no longer lists the same way
        return f"its OpenCL platform could not be read again ({error})"
    return answers.get(f"{p_index}:{d_index}", "the OpenCL probe did not list this device")


def start_child() -> None:
    """Start the child early (the probe lists devices meanwhile); its answers are read once needed."""
    if _child_answers or _child:
        return
    code = "from accelbench.devices.opencl_build import child_main; child_main()"
    try:
        _child.append(subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                       errors="backslashreplace"))
    except OSError as error:
        _child_answers.append(f"the OpenCL probe could not start: {error.strerror or error}")


def _ask_child() -> dict[str, str | None] | str:
    """Every device's answer from the child process, or why the child gave none."""
    start_child()
    if not _child:
        return _child_answers[0]
    child = _child.pop()
    try:
        stdout, stderr = child.communicate(timeout=CHILD_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return f"the OpenCL probe did not finish within {CHILD_TIMEOUT_S:g} s (a kernel build hung)"
    done = subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)
    lines = [line.strip() for line in (done.stdout or "").splitlines() if line.strip()]
    if done.returncode == 0 and lines:
        try:
            return dict(json.loads(lines[-1]))
        except (ValueError, TypeError):
            pass
    said = [line.strip() for line in (done.stderr or "").splitlines() if line.strip()]
    how = (f"aborted: {{}} ({signal.Signals(-done.returncode).name})" if done.returncode < 0
           else f"failed: {{}} (exit {done.returncode})")
    return "the OpenCL probe " + how.format(said[-1] if said else "no message")


def child_main() -> None:
    """In the child: try every device, print the answers as one JSON line."""
    import pyopencl as cl

    answers = {f"{p}:{d}": _build_here(device) for p, platform in enumerate(cl.get_platforms())
               for d, device in enumerate(platform.get_devices())}
    print(json.dumps(answers), flush=True)


def _build_here(cl_device: Any) -> str | None:
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


def stop_child() -> None:
    """No device to ask about after all: end the child, leave no zombie."""
    while _child:
        child = _child.pop()
        child.kill()
        child.communicate()


def forget() -> None:
    """Forget the answers (for tests)."""
    _answers.clear()
    _child_answers.clear()
