"""The specs' common shift as a finding of its own: every spec moved together, and not the machine.

A uniform slowdown moves every spec by one factor, but each spec's own band must allow for what
that spec alone does between identical runs (±15-60% for short calls in small groups), so a 1.3×
slowdown of every spec can stay within every band. The median of the specs' shifts is far steadier:
over 8 quiet A/A pairs of `accelbench run matmul stream --rigor quick --device cpu` on a 2-core
AMD Zen 5 VM (21-22 undisturbed specs each) it stayed within ±4.7%, while the machine reference's
own total moved up to 6%.

The shift counts as the code's when the distribution-free 95% interval of that median (order
statistics of the specs' log ratios, timing/stats.median_ci) lies wholly beyond what the machine
reference allows (its shift and tolerance) plus FLOOR. Only specs undisturbed in both runs count,
at least MIN_SPECS of them; without a reference on both runs there is no such finding.

The multi-thread specs get a shift of their own (`code_shifts`): a change that slows only the work
spread over all cores (a thread pool's setting, a lock) moves half the specs, which the median of
all of them does not show. Their allowance adds the median of the all-cores probes' shifts beside
them, where it points the way the specs moved: the host's all-core slow phases move those specs
together too.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from accelbench.report.compare.machine import MachineShift, ratio_text
from accelbench.timing import stats

MIN_SPECS = 8     # a median's 95% interval from fewer order statistics spans most of them
FLOOR = 0.05      # beyond the reference's allowance: A/A medians moved up to 4.7%


@dataclass(frozen=True)
class CommonShift:
    """The median speed-up of the undisturbed specs (time A / time B) and its 95% interval."""

    ratio: float
    low: float
    high: float
    specs: int
    allowance: float      # the largest shift identical code may show: exp(machine allowance + FLOOR)
    scope: str = "the specs together"

    @property
    def codes(self) -> bool:
        """The whole interval lies beyond the allowance: the code moved, not the machine."""
        return self.high < 1 / self.allowance or self.low > self.allowance

    def slower_beyond(self, fraction: float) -> bool:
        """The code's shift, a slowdown larger than `fraction` (0.1: 10%)."""
        return self.codes and self.ratio < 1 / (1 + fraction)

    def text(self) -> str:
        interval = (f"[{1 / self.high:.2f}–{1 / self.low:.2f}×]" if self.ratio < 1 else
                    f"[{self.low:.2f}–{self.high:.2f}×]")
        verdict = ("beyond" if self.codes else "within") + f" the ±{self.allowance - 1:.1%} the machine reference allows"
        return (f"{self.scope}: {ratio_text(self.ratio)} {interval} (median of {self.specs} undisturbed "
                f"specs), {verdict}" + (": the code's" if self.codes else ""))

    def to_dict(self) -> dict:
        return {"ratio": self.ratio, "ci_low": self.low, "ci_high": self.high, "specs": self.specs,
                "allowance": self.allowance, "codes": self.codes, "scope": self.scope, "text": self.text()}


def common_shift(speedups: Sequence[float], machine: MachineShift | None, extra_allowance_log: float = 0.0,
                 scope: str = "the specs together") -> CommonShift | None:
    """From the undisturbed specs' speed-ups; None without a machine reference or with too few specs.
    `extra_allowance_log`: what else the machine may have done to these specs (the probes' allowance)."""
    logs = sorted(math.log(x) for x in speedups if x > 0 and math.isfinite(x))
    if machine is None or len(logs) < MIN_SPECS:
        return None
    low, high = stats.median_ci_presorted(logs)
    allowance = math.exp(machine.total.allowance_log + extra_allowance_log + math.log1p(FLOOR))
    return CommonShift(math.exp(stats.median(logs)), math.exp(low), math.exp(high), len(logs), allowance, scope)


def code_shifts(rows: Sequence, machine: MachineShift | None) -> tuple[CommonShift, ...]:
    """The shift of all undisturbed specs, and of the multi-thread ones (those with an all-cores probe in
    both runs) where there are enough of them. `rows`: compare's SpecComparison rows."""
    clean = [r for r in rows if r.counted and r.speedup is not None and r.result_verdicts == ("valid", "valid")]
    probed = [r for r in clean if r.noise is not None and r.noise.probe_shift_log is not None]
    # all specs against the reference alone: adding the probes' shift where the multi-thread specs are
    # the majority cost power (all ×1.3 found in 2 of 4 quiet pairs, not 4) and no false change was
    # left to remove (the real A/A pairs' medians stayed within the reference's allowance)
    found = [common_shift([r.speedup.ratio for r in clean], machine)]
    if len(probed) >= MIN_SPECS:
        found.append(common_shift([r.speedup.ratio for r in probed], machine, probes_allowance_log(probed),
                                  "the multi-thread specs together"))
    return tuple(shift for shift in found if shift is not None)


def probes_allowance_log(probed: Sequence) -> float:
    """What the all-cores probes beside the multi-thread specs allow those specs' common shift: the
    median of the probes' shifts, where it points the way the specs moved (a machine whose all-core
    work ran faster during B cannot explain code that ran slower). The median, not each probe's own
    allowance: on 8 quiet A/A pairs (Zen 5) the probes' median moved 0.83-1.24× while the multi-thread
    specs' median moved 0.96-1.05×; each probe alone moves more still."""
    specs = stats.median([math.log(r.speedup.ratio) for r in probed])
    probes = stats.median([r.noise.probe_shift_log for r in probed])
    return max(0.0, probes if specs > 0 else -probes)
