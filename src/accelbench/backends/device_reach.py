"""Which installed backend reaches which inventory device: asked of the backends, not the probes.

The probes say what hardware exists; each backend says which of those devices it can put work on,
and under which id (`Backend.reach_id`), from installed packages and what the probe recorded (the
index CUDA_VISIBLE_DEVICES gives a GPU) alone. A new backend answers for itself, so adding one
changes no probe. Where a framework's own probe reported the device (the torch, jax and OpenCL
probes, which ask the framework), its entry wins over a backend's judgement.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable

from accelbench.backends.registry import BackendLoadError, backend_names, get_backend
from accelbench.devices.model import Device


def backend_reach(device: Device, backends: Iterable[Any] | None = None) -> dict[str, str]:
    """backend name -> the id it knows `device` by, for every backend that says it reaches it."""
    found: dict[str, str] = {}
    for backend in _loaded() if backends is None else backends:
        try:
            reach_id = backend.reach_id(device)
        except Exception:  # noqa: BLE001 - a plugin that fails to answer reaches nothing
            reach_id = None
        if reach_id is not None:
            found[backend.name] = reach_id
    return found


def with_backend_reach(devices: Iterable[Device], backends: Iterable[Any] | None = None) -> tuple[Device, ...]:
    """`devices` with what the backends reach added to each one's `reach` (the probe's entries win)."""
    asked = list(_loaded() if backends is None else backends)
    return tuple(replace(d, reach={**backend_reach(d, asked), **d.reach}) for d in devices)


def _loaded() -> list[Any]:
    loaded = []
    for name in backend_names():
        try:
            loaded.append(get_backend(name))
        except BackendLoadError:
            continue  # a broken plugin: `accelbench list` says why
    return loaded
