"""Probes that load a driver's native library run in a child process with a time limit.

A driver library can end its whole process: an assertion in libnvidia-ml or libamd_smi, a
segfault in a mismatched driver, an LLVM abort on a full disk. A probe module that says so
(`NATIVE = True`, and `needs_isolation()` true on this machine: a driver is there to load) is run
by a child that prints its devices as one JSON line; its abort or hang becomes the probe's reason
("the nvidia probe aborted: SIGABRT …") and the command goes on. Where no driver is there, the probe
runs in this process: it fails in Python at once (no library to load), and `info` stays fast.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from typing import Any, Callable

from accelbench.devices.model import ERROR, PROBE_STATUSES, Device, device_from_dict
from accelbench.devices.probing import ProbeFailure, classify

CHILD_TIMEOUT_S = 60.0   # NVML and amdsmi answer within a second or two; a hung driver does not


def wants_child(module: Any) -> bool:
    """Whether a probe module must run in a child here: it loads native code, and a driver is present."""
    if not getattr(module, "NATIVE", False):
        return False
    check: Callable[[], bool] | None = getattr(module, "needs_isolation", None)
    try:
        return bool(check()) if check is not None else True
    except Exception:  # noqa: BLE001 - unsure: the child costs a second, an abort costs the command
        return True


def probe_in_child(name: str, target: str, timeout_s: float = CHILD_TIMEOUT_S) -> list[Device]:
    """The devices `target` ("module:function") finds, probed in a child process."""
    code = "from accelbench.devices.isolated import child_main; child_main()"
    try:
        done = subprocess.run([sys.executable, "-c", code, target], capture_output=True, text=True,
                              errors="backslashreplace", stdin=subprocess.DEVNULL, timeout=timeout_s,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)})
    except subprocess.TimeoutExpired:
        raise ProbeFailure(ERROR, f"the {name} probe did not answer within {timeout_s:g} s (a hung driver call)") from None
    except OSError as error:
        raise ProbeFailure(ERROR, f"the {name} probe could not start: {error.strerror or error}") from None
    lines = [line for line in (done.stdout or "").splitlines() if line.strip()]
    answer = _parsed(lines[-1]) if done.returncode == 0 and lines else None
    if answer is None:
        said = [line.strip() for line in (done.stderr or "").splitlines() if line.strip()]
        last = said[-1] if said else "no message"
        if done.returncode < 0:
            raise ProbeFailure(ERROR, f"the {name} probe aborted: {last} ({signal.Signals(-done.returncode).name})")
        raise ProbeFailure(ERROR, f"the {name} probe failed: {last} (exit {done.returncode})")
    if "failure" in answer:
        status, message = answer["failure"]
        raise ProbeFailure(status if status in PROBE_STATUSES else ERROR, str(message))
    return [device_from_dict(entry) for entry in answer.get("devices", [])]


def _parsed(line: str) -> dict[str, Any] | None:
    try:
        answer = json.loads(line)
    except ValueError:
        return None
    return answer if isinstance(answer, dict) else None


def child_main() -> None:
    """In the child: run the probe named on the command line, print one JSON line."""
    from accelbench.plugins import load_target

    try:
        devices = list(load_target(sys.argv[1])())
    except Exception as exc:  # noqa: BLE001 - classified as in this process, then sent to the parent
        print(json.dumps({"failure": list(classify(exc))}), flush=True)
        return
    print(json.dumps({"devices": [d.to_dict() for d in devices]}, default=str), flush=True)
