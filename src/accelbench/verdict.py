"""Every measurement ends with a verdict a user can see: what it is worth, and why.

- `invalid`: the timed work's output was wrong, the rate is beyond what the device can do,
  synchronisation did not wait, or the output did not live where it was asked to: counts nowhere.
- `noisy`: valid, but disturbed (a busy machine, phases that disagree, a missed target): shown,
  never a ceiling and never the basis of a faster/slower verdict.
- `unverified`: no reference to check against (a user function without one): shown, never a ceiling.
- `valid`: everything above held.
"""
from __future__ import annotations

from dataclasses import dataclass

VALID, NOISY, UNVERIFIED, INVALID = "valid", "noisy", "unverified", "invalid"
VERDICTS = (VALID, NOISY, UNVERIFIED, INVALID)  # least to most severe
_SEVERITY = {name: rank for rank, name in enumerate(VERDICTS)}


@dataclass(frozen=True)
class Finding:
    """One reason, and the verdict it alone would give."""

    status: str
    reason: str


@dataclass(frozen=True)
class Verdict:
    status: str = VALID
    reasons: tuple[str, ...] = ()

    @property
    def counts(self) -> bool:
        """Its time may be shown as a rate and a speed-up."""
        return self.status != INVALID

    @property
    def trusted(self) -> bool:
        """It may become a measured ceiling."""
        return self.status == VALID

    def text(self) -> str:
        return self.status + (f": {'; '.join(self.reasons)}" if self.reasons else "")


def severity(status: str) -> int:
    return _SEVERITY.get(status, _SEVERITY[INVALID])


def combine(findings: list[Finding] | tuple[Finding, ...]) -> Verdict:
    """The most severe status among the findings; reasons ordered from the most severe down."""
    if not findings:
        return Verdict()
    ordered = sorted(findings, key=lambda f: -severity(f.status))
    reasons = tuple(dict.fromkeys(f.reason for f in ordered))  # once each, order kept
    return Verdict(ordered[0].status, reasons)
