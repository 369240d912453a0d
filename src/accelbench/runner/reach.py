"""The devices in the inventory that no backend reaches, grouped by model, with the reason and the fix.

The trap every GPU tutorial warns about: GPUs in the machine, a CPU-only framework, and a run that
measures the CPU alone without a word. Framework knowledge lives in each backend
(`Backend.unreached_reason`); this module asks every backend about every device none of them
reaches and groups the answers, so a new backend is one file. Used by `accelbench run`, the
machine record stored with each run (and so the report), and the Python API.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from accelbench.backends.registry import Listed
from accelbench.devices.model import Device
from accelbench.verdict import HIDDEN, kind_of


@dataclass(frozen=True)
class UnreachedDevices:
    """Devices of one model, found by the inventory and measured by no backend, for the same reasons."""

    name: str
    device_ids: tuple[str, ...]
    reasons: tuple[tuple[str, str], ...]  # (backend, why and the fix); backend "" when none spoke

    @property
    def text(self) -> str:
        """"2 × Tesla K40m (cuda:0, cuda:1) found, not measured: torch 2.13.0+cpu is a CPU-only build: …"."""
        count = len(self.device_ids)
        who = f"{count} × {self.name}" if count > 1 else self.name
        why = "; ".join(reason for _, reason in self.reasons)
        return f"{who} ({', '.join(self.device_ids)}) found, not measured: {why}"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "device_ids": list(self.device_ids), "count": len(self.device_ids),
                "reasons": [{"backend": b, "reason": r} for b, r in self.reasons], "text": self.text}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> UnreachedDevices:
        reasons = tuple((str(r.get("backend", "")), str(r.get("reason", ""))) for r in data.get("reasons", ()))
        return cls(str(data.get("name", "")), tuple(str(i) for i in data.get("device_ids", ())), reasons)


def unreached_devices(devices: Iterable[Device], backends: Listed) -> list[UnreachedDevices]:
    """Every device of `devices` (an inventory's) that no available backend of `backends` reaches."""
    reached = _reached_ids(backends)
    groups: dict[tuple[str, tuple[tuple[str, str], ...]], list[str]] = {}
    for device in devices:
        if _hidden(device) is None and any(device.id in ids or device.reach.get(name) in ids
                                           for name, ids in reached.items()):
            continue
        groups.setdefault((device.name, _reasons(device, backends)), []).append(device.id)
    return [UnreachedDevices(name, tuple(ids), reasons) for (name, reasons), ids in groups.items()]


def _reached_ids(backends: Listed) -> dict[str, set[str]]:
    reached = {}
    for name, backend in backends.items():
        try:
            if backend.availability().ok:
                reached[name] = set(backend.device_ids())
        except Exception:  # noqa: BLE001 - a backend that breaks while listing reaches nothing
            continue
    return reached


def _hidden(device: Device) -> str | None:
    """The probe's "hidden by CUDA_VISIBLE_DEVICES=…" warning: no framework in this process sees it."""
    return next((w for w in device.warnings if kind_of(w) == HIDDEN), None)


def _reasons(device: Device, backends: Listed) -> tuple[tuple[str, str], ...]:
    hidden = _hidden(device)
    if hidden:
        setting = getattr(hidden, "figures", {}).get("setting", "a visibility variable")
        return (("", f"hidden by {setting}: list this device there or unset it"),)
    reasons: list[tuple[str, str]] = []
    for name, backend in backends.items():
        ask = getattr(backend, "unreached_reason", None)
        try:
            reason = ask(device) if ask else None
        except Exception as error:  # noqa: BLE001 - a plugin that fails to explain still leaves the device named
            reason = f"{name} failed while checking it: {type(error).__name__}: {error}"
        if reason and reason not in (r for _, r in reasons):
            reasons.append((name, reason))
    if not reasons:
        names = ", ".join(backends) or "none"
        reasons.append(("", f"no backend in this run ({names}) works with it; `accelbench list` shows what each reaches"))
    return tuple(reasons)


def unreached_records(inventory: Any, backends: Listed) -> list[dict[str, Any]]:
    """unreached_devices as JSON-ready dicts, for the machine record stored with a run."""
    return [group.to_dict() for group in unreached_devices(inventory.devices, backends)]
