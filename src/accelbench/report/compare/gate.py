"""`compare --fail-if-slower PCT` as a decision: failed, passed, or could not be decided.

An inconclusive comparison must never read as a pass. A spec is decided for the gate when it is
significantly slower beyond PCT (the gate fails), or when a slowdown beyond PCT is ruled out: its
verdict is same, faster or slower by less than PCT, or it is inconclusive with its whole 95%
interval above 1/(1 + PCT). Every other counted spec (inconclusive within run-to-run noise, noisy,
too few samples, a wide interval) leaves the gate undecided. The gate also fails when the undisturbed
specs together moved by a slowdown beyond PCT that the machine reference does not show
(compare/common_shift.py), though no one spec cleared its own band. Exit codes (cli/compare_cmd.py):
0 passed, 1 failed, 3 could not be decided; 2 stays bad input.
"""
from __future__ import annotations

from dataclasses import dataclass

from accelbench.report.compare.compare import Comparison, SpecComparison

EXIT_PASSED, EXIT_FAILED, EXIT_UNDECIDED = 0, 1, 3


@dataclass(frozen=True)
class Gate:
    percent: float
    failing: tuple[SpecComparison, ...]
    undecided: tuple[SpecComparison, ...]
    comparison: Comparison

    @property
    def shifted(self) -> bool:
        """Every undisturbed spec moved together by a slowdown beyond PCT that the machine reference does
        not show (compare/common_shift.py): the gate fails though no one spec's band was cleared."""
        found = self.comparison.code_shift
        return found is not None and found.slower_beyond(self.percent / 100)

    @property
    def outcome(self) -> str:
        return "failed" if self.failing or self.shifted else "undecided" if self.undecided else "passed"

    @property
    def exit_code(self) -> int:
        return {"failed": EXIT_FAILED, "undecided": EXIT_UNDECIDED, "passed": EXIT_PASSED}[self.outcome]

    def text(self) -> str:
        """One line for the end of a CI log: what was decided, and what could not be and why."""
        if self.failing:
            return (f"--fail-if-slower {self.percent:g}: FAILED, {len(self.failing)} spec(s) significantly slower "
                    f"by more than {self.percent:g}%, beyond run-to-run noise")
        if self.shifted:
            return (f"--fail-if-slower {self.percent:g}: FAILED, {self.comparison.code_shift.text()}"  # type: ignore[union-attr]
                    f", a slowdown beyond {self.percent:g}%")
        if not self.undecided:
            return (f"--fail-if-slower {self.percent:g}: passed, a slowdown beyond {self.percent:g}% is ruled out for "
                    f"all {self._decided()} spec(s) compared")
        return (f"--fail-if-slower {self.percent:g}: COULD NOT BE DECIDED for {len(self.undecided)} of "
                f"{self._decided() + len(self.undecided)} spec(s) ({self._reasons()}); "
                f"{self.comparison.machine_text()}")

    def _decided(self) -> int:
        return sum(r.counted for r in self.comparison.rows) - len(self.undecided)

    def _reasons(self) -> str:
        within = [r for r in self.undecided if r.within_noise]
        noisy = [r for r in self.undecided if not r.within_noise and "noisy" in r.result_verdicts]
        other = len(self.undecided) - len(within) - len(noisy)
        parts = []
        if within:
            widest = max(r.noise.fraction for r in within if r.noise is not None)
            parts.append(f"{len(within)} changed within their run-to-run noise band (up to ±{widest:.0%})")
        if noisy:
            parts.append(f"{len(noisy)} with a noisy result (the machine was busy)")
        if other:
            parts.append(f"{other} whose 95% interval reaches a slowdown beyond {self.percent:g}%")
        return "; ".join(parts)

    def to_dict(self) -> dict:
        return {"percent": self.percent, "outcome": self.outcome, "exit_code": self.exit_code,
                "failed": self.outcome == "failed", "common_shift_failed": self.shifted, "specs": [r.label for r in self.failing],
                "why": {r.label: r.why_slower() for r in self.failing},
                "undecided": {r.label: r.note or r.verdict_text() for r in self.undecided}, "text": self.text()}


def slowdown_ruled_out(row: SpecComparison, fraction: float) -> bool:
    """The spec cannot be slower than 1 + fraction: same, faster, a lesser slowdown, or an interval above it."""
    if row.verdict in ("same", "faster") or (row.verdict == "slower" and row.slowdown_fraction() <= fraction):
        return True
    return row.speedup is not None and row.speedup.low >= 1 / (1 + fraction)


def gate(comparison: Comparison, percent: float) -> Gate:
    fraction = percent / 100
    failing = tuple(comparison.slower_than(fraction))
    undecided = tuple(r for r in comparison.rows
                      if r.counted and r not in failing and not slowdown_ruled_out(r, fraction))
    return Gate(percent, failing, undecided, comparison)
