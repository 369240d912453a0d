"""What was measured and what came out: the types every layer after timing passes around.

Statistics are derived from the raw samples (accelbench.timing.stats), never stored twice.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from accelbench.verdict import caveats_from_json, caveats_to_json
from accelbench.vocabulary import ROLES, Role

PHASES = ("to_device", "compute", "to_host", "end_to_end")



def finite(value: Any) -> Any:
    """NaN and ±Infinity as null, all the way down: plain JSON has no such numbers."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value

#: one workload parameter's value, as the results document allows it (a string, number, true, false or null)
ParamValue = str | int | float | bool | None
#: a workload's parameters for one instance ({"n": 1000, "dtype": "float32"}): what grid() makes
Params = dict[str, ParamValue]


@dataclass(frozen=True)
class Spec:
    """What was measured: hashable, the key for grouping and comparing results."""

    workload: str
    backend: str
    device: str
    params: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def make(cls, workload: str, backend: str, device: str, **params: Any) -> "Spec":
        return cls(workload, backend, device, tuple(sorted(params.items())))

    def param(self, name: str, default: Any = None) -> Any:
        return dict(self.params).get(name, default)

    @cached_property  # a report asks for it tens of thousands of times
    def key(self) -> str:
        """A stable text key: the same spec measured in two runs has the same key."""
        return json.dumps([self.workload, self.backend, self.device, [list(p) for p in self.params]],
                          separators=(",", ":"), default=str)

    def label(self) -> str:
        params = " ".join(f"{k}={v}" for k, v in self.params)
        return f"{self.workload} [{self.backend}@{self.device}] {params}".strip()

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "backend": self.backend, "device": self.device,
                "params": {k: v for k, v in self.params}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Spec":
        return cls.make(data["workload"], data["backend"], data["device"], **dict(data.get("params", {})))


@dataclass(frozen=True)
class Work:
    """Work per timed call, so rates are derived: FLOP/s = flops / seconds."""

    flops: float = 0.0
    bytes_moved: float = 0.0

    @property
    def intensity_flop_per_byte(self) -> float | None:
        return self.flops / self.bytes_moved if self.bytes_moved else None

    def to_dict(self) -> dict[str, float]:
        return {"flops": self.flops, "bytes_moved": self.bytes_moved}


@dataclass(frozen=True)
class Check:
    """The output compared with a float64 reference on the same fresh random inputs."""

    passed: bool
    max_rel_error: float
    tolerance: float
    detail: str = ""
    device_seen: str | None = None  # where the output actually lived
    # the conditions that failed, by name ("device", "price"): what code judging further reads, never
    # the detail's words; held in the process only (not stored, not compared)
    failed_conditions: tuple[str, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "max_rel_error": self.max_rel_error, "tolerance": self.tolerance,
                "detail": self.detail, "device_seen": self.device_seen}


@dataclass(frozen=True)
class Measurement:
    """One spec measured: raw samples per phase, the first call kept apart, the check, warnings.

    `phases_s` maps a phase name (PHASES) to its raw samples in seconds per call; "compute" is
    always present. `first_call_s` includes compilation, autotuning and lazy initialisation.
    """

    spec: Spec
    phases_s: dict[str, tuple[float, ...]]
    first_call_s: float
    work: Work
    check: Check
    warnings: tuple[str, ...] = ()
    calls_per_sample: int = 1
    target_met: bool = True
    threads: int | None = None
    telemetry: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # workload-specific metrics, with units in names
    #: valid | noisy | unverified | invalid (accelbench.verdict); "" for results stored before verdicts
    verdict: str = ""
    verdict_reasons: tuple[str, ...] = ()
    #: the version of the workload code that made it (Workload.version); None: unknown (stored
    #: before workloads had versions). `compare` names a change as a difference between runs.
    workload_version: str | None = None
    #: what its figures say about a device, as its workload declared it when it ran (Workload.role), so a
    #: result read where that workload is not installed keeps it; None: declared none, or stored before roles
    role: Role | None = None

    def __post_init__(self) -> None:
        if not self.verdict:  # results made before verdicts existed get theirs from the check
            object.__setattr__(self, "verdict", "valid" if self.check.passed else "invalid")

    def __repr__(self) -> str:
        """One line: what was measured, the median compute time, the verdict and its first reason
        (the samples, telemetry and every figure: `.to_dict()`)."""
        import statistics

        from accelbench.units import format_seconds

        samples = self.phases_s.get("compute") or ()
        median = f"median {format_seconds(statistics.median(samples))} of {len(samples)}" if samples else "no samples"
        params = " ".join(f"{k}={v}" for k, v in self.spec.params)
        why = f": {self.verdict_reasons[0][:150]}" if self.verdict_reasons and self.verdict != "valid" else ""
        return (f"Measurement({self.spec.workload} {self.spec.backend}@{self.spec.device} {params}: "
                f"{median}; {self.verdict}{why})")

    @property
    def samples_s(self) -> tuple[float, ...]:
        return self.phases_s["compute"]

    @property
    def valid(self) -> bool:
        """Its time counts as a rate and a speed-up: the check passed and nothing made it invalid."""
        return self.check.passed and self.verdict != "invalid"

    @property
    def trusted(self) -> bool:
        """It may become a measured ceiling: valid, not noisy or unverified."""
        return self.valid and self.verdict == "valid"

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec.to_dict(),
            "phases_s": {k: list(v) for k, v in self.phases_s.items()},
            "first_call_s": self.first_call_s,
            "work": self.work.to_dict(),
            "check": self.check.to_dict(),
            "warnings": caveats_to_json(self.warnings),
            "calls_per_sample": self.calls_per_sample,
            "target_met": self.target_met,
            "threads": self.threads,
            "telemetry": dict(self.telemetry),
            "extra": dict(self.extra),
            "verdict": self.verdict,
            "verdict_reasons": caveats_to_json(self.verdict_reasons),
            "workload_version": self.workload_version,
            "role": self.role,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Measurement":
        check = data["check"]
        return cls(
            spec=Spec.from_dict(data["spec"]),
            phases_s={k: tuple(map(float, v)) for k, v in data["phases_s"].items()},
            first_call_s=float(data["first_call_s"]),
            work=Work(float(data["work"]["flops"]), float(data["work"]["bytes_moved"])),
            check=Check(bool(check["passed"]), float(check["max_rel_error"]), float(check["tolerance"]),
                        str(check.get("detail", "")), check.get("device_seen")),
            warnings=caveats_from_json(data.get("warnings")),
            calls_per_sample=int(data.get("calls_per_sample", 1)),
            target_met=bool(data.get("target_met", True)),
            threads=data.get("threads"),
            telemetry=dict(data.get("telemetry", {})),
            extra=dict(data.get("extra", {})),
            verdict=str(data.get("verdict") or ""),
            verdict_reasons=caveats_from_json(data.get("verdict_reasons")),
            workload_version=_version_or_none(data.get("workload_version")),
            role=role_or_none(data.get("role")),
        )


def _version_or_none(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def role_or_none(value: Any) -> Role | None:
    """A stored role, if it is one of ROLES (None: stored before roles, or declared none)."""
    return next((role for role in ROLES if role == value), None)


FAILED_PREFIX = "failed: "


@dataclass(frozen=True)
class Skip:
    """A combination that did not run, and why (the backend or device cannot, or it failed)."""

    spec: Spec
    reason: str

    @classmethod
    def failure(cls, spec: Spec, why: str) -> "Skip":
        """A spec that was tried and failed (an error, a timeout, out of memory)."""
        return cls(spec, f"{FAILED_PREFIX}{why}")

    @property
    def failed(self) -> bool:
        """Tried and failed, not a combination that cannot run. The prefix is part of the stored
        and exported reason (the one place it is read), so results stored long ago read the same."""
        return self.reason.startswith(FAILED_PREFIX.rstrip(" :"))

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec.to_dict(), "reason": self.reason}


@dataclass(frozen=True)
class PairedSamples:
    """A speed-up timed in interleaved rounds (runner/pairing.py): per round, seconds per call of
    the baseline's phase and of the candidate's. Raw times, so the ratio is derived (runner/speedups.py);
    no rounds and a `note` saying why when the speed-up was not paired."""

    kind: str              # runner/speedups.py KINDS
    baseline: Spec
    baseline_phase: str
    candidate: Spec
    candidate_phase: str
    baseline_s: tuple[float, ...] = ()
    candidate_s: tuple[float, ...] = ()
    note: str = ""
    note_kind: str = ""    # what the note reports, as a value (runner/speedups.py CROSS_TALK_KIND, REPAIRED_KIND); "" none

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.baseline.key, self.baseline_phase, self.candidate.key, self.candidate_phase)


# a CPU measurement that claims N threads used fewer when its threads' CPU time / wall time over the
# timed window stays under this share of N (one busy core of two reads ~0.5; two, ~1.0)
CLAIMED_THREADS_SHARE = 0.6


def cores_used(m: Measurement) -> float | None:
    """CPU time of the process's threads / wall time over the compute phase's timed window (None:
    not recorded, or not measurable there)."""
    compute = (m.telemetry or {}).get("interference", {}).get("compute") or {}
    value = compute.get("own_cores") if isinstance(compute, dict) else None
    return float(value) if isinstance(value, (int, float)) else None


def uses_claimed_threads(m: Measurement) -> bool:
    """False only where a CPU measurement claims N > 1 threads and was seen to use well under N
    cores (so it is no "all cores" baseline); True where the claim holds or cannot be checked."""
    if m.spec.device != "cpu" or not m.threads or m.threads < 2:
        return True
    used = cores_demanded(m) or cores_used(m)  # runnable, not running: load elsewhere does not lower it
    return used is None or used >= CLAIMED_THREADS_SHARE * m.threads


def cores_demanded(m: Measurement) -> float | None:
    """Runnable time of the process's threads / wall time over the compute window: the threads it
    really ran, whether or not other processes let them on a CPU (None: not recorded)."""
    compute = (m.telemetry or {}).get("interference", {}).get("compute") or {}
    value = compute.get("own_demand_cores") if isinstance(compute, dict) else None
    return float(value) if isinstance(value, (int, float)) else None
