"""What a finding is: a statement the measurements support, its severity and the numbers it quotes."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

WARNING, INFO = "warning", "info"
IQR_UNSTABLE = 0.10  # an interquartile range above 10% of the median: the number moves run to run
FINDINGS_SHOWN = 8  # lines in repr()


@dataclass(frozen=True)
class Finding:
    kind: str          # "break_even", "no_break_even", "compute_bound", "memory_bound", "precision", ...
    severity: str      # "warning" (a number is not to be trusted as is) | "info"
    text: str
    numbers: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "severity": self.severity, "text": self.text, "numbers": dict(self.numbers)}

    def __repr__(self) -> str:
        return f"Finding({self.severity}: {self.text})"


class Findings(list):
    """What a run's measurements support saying, warnings first: a list of Finding that a notebook
    shows as sentences (repr: one line each, at most FINDINGS_SHOWN)."""

    def __repr__(self) -> str:
        from accelbench.report.result_text import clip

        lines = [f"  {f.severity}: {clip(f.text, 300)}" for f in self[:FINDINGS_SHOWN]]
        if len(self) > FINDINGS_SHOWN:
            lines.append(f"  … {len(self) - FINDINGS_SHOWN} more: list(findings)")
        return "\n".join([f"Findings ({len(self)}):", *lines])

    def _repr_html_(self) -> str:
        from html import escape

        items = "".join(f"<li><b>{escape(f.severity)}</b>: {escape(f.text)}</li>" for f in self)
        return f"<p><b>Findings</b> ({len(self)})</p><ul>{items}</ul>"


def render_findings(found: list[Finding], console: Any) -> None:
    """The findings in a terminal, as `accelbench run` ends: a mark per finding (! a warning), each
    wrapped under its own indent at the console's width."""
    from accelbench.terminal import hanging, literal

    if not found:
        return
    console.print()
    console.print("[bold]Findings[/] (from these measurements; `accelbench report` draws them):")
    for finding in found:
        mark = "[yellow]![/]" if finding.severity == WARNING else "•"
        console.print(hanging(mark, literal(finding.text)))
