"""How hard the harness tries: precision target, time budget, sample and warm-up limits.

The budget is clock time per measurement *after* the first call (which may be a long compile and
is always timed once): overhead probing, warm-up and sampling all come out of it. A measurement
stops early when the 95% confidence interval of the median is within ±target of the median.

Sizing "quick": a suite of about 40 measurements should finish in about 90 s on 2 cores. At
0.75 s each, sampling takes 30 s, leaving the rest for first calls, input set-up and checks.
"""
from __future__ import annotations

from dataclasses import dataclass

from accelbench.errors import UsageError
from accelbench.vocabulary import RIGOR_NAMES


@dataclass(frozen=True)
class Rigor:
    name: str
    target_rel_ci: float      # stop once the 95% CI of the median is within ±this fraction of it
    budget_s: float           # clock time per measurement after the first call
    min_samples: int          # before the target may stop sampling (the 95% CI needs >= 6)
    max_samples: int
    max_warmup_samples: int   # warm-up blocks at most, even if the times still trend down
    max_warmup_s: float       # and at most this much of the budget
    min_block_s: float        # a timed block (calls per sample) lasts at least this long

    def __post_init__(self) -> None:
        if not 0 < self.target_rel_ci < 1:
            raise ValueError(f"target_rel_ci must be within (0, 1), got {self.target_rel_ci}")
        if self.budget_s <= 0 or self.min_block_s <= 0 or self.max_warmup_s < 0:
            raise ValueError("budget_s and min_block_s must be > 0, max_warmup_s >= 0")
        if not 1 <= self.min_samples <= self.max_samples:
            raise ValueError(f"need 1 <= min_samples <= max_samples, got {self.min_samples}, "
                             f"{self.max_samples}")
        if self.max_warmup_samples < 1:
            raise ValueError("max_warmup_samples must be >= 1")


QUICK, STANDARD, RIGOROUS = RIGOR_NAMES  # the names are the vocabulary's, written once
RIGORS: dict[str, Rigor] = {level.name: level for level in (
    Rigor(QUICK, target_rel_ci=0.05, budget_s=0.75, min_samples=10, max_samples=300,
          max_warmup_samples=10, max_warmup_s=0.15, min_block_s=0.001),
    Rigor(STANDARD, target_rel_ci=0.02, budget_s=3.0, min_samples=15, max_samples=1000,
          max_warmup_samples=20, max_warmup_s=0.5, min_block_s=0.002),
    Rigor(RIGOROUS, target_rel_ci=0.01, budget_s=15.0, min_samples=30, max_samples=5000,
          max_warmup_samples=50, max_warmup_s=3.0, min_block_s=0.005),
)}
DEFAULT_RIGOR = STANDARD


def get_rigor(rigor: Rigor | str) -> Rigor:
    """A Rigor as given, or the named one; an unknown name is a usage error listing the choices."""
    if isinstance(rigor, Rigor):
        return rigor
    try:
        return RIGORS[rigor]
    except KeyError:
        raise UsageError(f"unknown rigor {rigor!r}: choose one of {', '.join(RIGORS)}") from None
