"""What a health check says: one finding per check, and what the whole check means for a job.

Every finding carries the measured figure, the expected one and where that expectation came from,
so an administrator can tell a fault from a wrong expectation. Standard library only.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PASS, WARN, FAIL, SKIP, INCONCLUSIVE = "PASS", "WARN", "FAIL", "SKIP", "INCONCLUSIVE"
STATUSES = (PASS, WARN, FAIL, SKIP, INCONCLUSIVE)
LEVELS = ("quick", "standard", "long")

# exit codes (docs/health-check.md): a Slurm prolog drains on 1, retries later on 3
EXIT_HEALTHY, EXIT_FAULT, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 3

# where an expected figure came from
DATASHEET, FORMULA, FLEET, HISTORY, CONFIG, THEORY, LINK = (
    "datasheet", "formula", "fleet median", "this machine's history", "configuration", "theory",
    "PCIe link theory")


class Unanswered(str):
    """Why a device call gave no value (the text a person reads), and which kind of no it was
    (`kind`: UNSUPPORTED, HUNG or CALL_FAILED): what the checks decide on, never the wording."""

    kind: str

    def __new__(cls, text: str, kind: str) -> "Unanswered":
        made = super().__new__(cls, text)
        made.kind = kind
        return made


UNSUPPORTED = "unsupported"   # the device or its driver does not offer the value
HUNG = "hung"                 # the call did not answer in time: the driver is stuck
CALL_FAILED = "failed"        # any other error


@dataclass(frozen=True)
class HealthFinding:
    """One check of one device: PASS, WARN, FAIL, SKIP or INCONCLUSIVE, and why."""

    check: str                      # "cpu.quota", "cuda:0.pcie_link"
    device: str                     # "cpu", "cuda:0"
    status: str
    summary: str                    # one line a person acts on
    measured: Any = None            # the figure read or measured (number or text)
    expected: Any = None            # what a healthy device gives
    unit: str = ""
    source: str = ""                # where `expected` came from (DATASHEET, FORMULA, ...)
    detail: str = ""                # the inputs behind `expected`, the evidence behind the status
    elapsed_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)
    unanswered: str = ""            # the Unanswered kind behind a check that got no value, else ""

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}")

    def to_dict(self) -> dict[str, Any]:
        data = {"check": self.check, "device": self.device, "status": self.status, "summary": self.summary,
                "measured": self.measured, "expected": self.expected, "unit": self.unit, "source": self.source,
                "detail": self.detail, "elapsed_s": round(self.elapsed_s, 3)}
        if self.extra:
            data["extra"] = dict(self.extra)
        return data


def finding(check: str, device: str, status: str, summary: str, **kwargs: Any) -> HealthFinding:
    return HealthFinding(check, device, status, summary, **kwargs)


def overall(findings: list[HealthFinding]) -> str:
    """FAIL over INCONCLUSIVE over the rest: a definite fault outranks a busy machine."""
    statuses = {f.status for f in findings}
    if FAIL in statuses:
        return FAIL
    if INCONCLUSIVE in statuses:
        return INCONCLUSIVE
    return WARN if WARN in statuses else PASS


def exit_code(findings: list[HealthFinding]) -> int:
    return {FAIL: EXIT_FAULT, INCONCLUSIVE: EXIT_INCONCLUSIVE}.get(overall(findings), EXIT_HEALTHY)


def ratio_status(ratio: float, warn_below: float, fail_below: float) -> str:
    """PASS at or above warn_below of the expected figure, WARN above fail_below, else FAIL."""
    if ratio < fail_below:
        return FAIL
    return WARN if ratio < warn_below else PASS
