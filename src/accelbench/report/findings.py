"""What a finding is: a statement the measurements support, its severity and the numbers it quotes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

WARNING, INFO = "warning", "info"
IQR_UNSTABLE = 0.10  # an interquartile range above 10% of the median: the number moves run to run


@dataclass(frozen=True)
class Finding:
    kind: str          # "break_even", "no_break_even", "compute_bound", "memory_bound", "precision", ...
    severity: str      # "warning" (a number is not to be trusted as is) | "info"
    text: str
    numbers: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "severity": self.severity, "text": self.text, "numbers": dict(self.numbers)}
