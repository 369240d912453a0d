"""Which speed-ups a run shows, and their ratios: from interleaved paired rounds where measured.

A speed-up compares two measurements. Taken minutes apart, each under whatever load the machine
had then, their ratio carries that load's comings and goings. runner/pairing.py therefore times
both sides again in alternating rounds (one block each per round, a balanced order); each round
gives one ratio, and the speed-up is the median of those paired ratios with a distribution-free
interval, so load that changes slower than a round cancels. Where pairing did not happen (an
imported run, blocks too long for the budget) the ratio of the two medians is shown, marked
"unpaired".
"""
from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from accelbench.results import Measurement, PairedSamples, uses_claimed_threads
from accelbench.runner import paired_check
from accelbench.runner.cpu_baseline import baseline_key, collapsed_baselines, is_baseline_measurement
from accelbench.runner.load_bias import TIMING_MOVED, safe_verdicts, with_load_moved
from accelbench.timing import bootstrap, stats
from accelbench.verdict import NOISY, kind_of
from accelbench.vocabulary import is_cpu_baseline

CPU_ALL_CORES = "cpu_all_cores"     # the CPU on all cores (compute) / this compute time
CPU_ONE_THREAD = "cpu_one_thread"   # the CPU on one thread (compute) / this compute time
END_TO_END = "end_to_end"           # the CPU on all cores (compute) / this end-to-end time
# "the CPU": the fastest CPU implementation measured in the run (cpu_baselines)
VS_FLOAT32 = "vs_float32"           # this dtype's compute time / float32's, same series and parameters
                                    # (compute-bound work: every dtype; other work: float64)
KINDS = (CPU_ALL_CORES, CPU_ONE_THREAD, END_TO_END, VS_FLOAT32)

CROSS_TALK = "cross-talk:"  # runner/pairing.py notes a speed-up timed beside busy threads of ours so
REPAIRED = "paired twice:"  # ... and one whose first rounds came out contaminated or scattered
# ... and says which of the two it is as a value (PairedSamples.note_kind): what the ratio reads
CROSS_TALK_KIND, REPAIRED_KIND = "cross_talk", "paired_twice"
PAIRED_METHOD = "median of paired ratios from interleaved rounds (balanced order), order-statistic 95% CI"
UNPAIRED_NOTE = "unpaired: ratio of two medians measured apart"
MIN_PAIRS = 6  # fewer paired ratios give no 95% interval for their median
CONTAMINATED = "contaminated"
INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class SpeedupCI(stats.RatioCI):
    """A speed-up with its interval, and whether it comes from paired rounds (`pairs` > 0)."""

    pairs: int = 0
    note: str = ""   # for an unpaired ratio: why it is not paired
    contaminated: str = ""   # for a paired one that failed its check (runner/paired_check.py): why
    # for an unpaired one: why a side's median was moved by load, and which sides ("baseline", "candidate")
    load_moved: str = ""
    moved_sides: frozenset[str] = frozenset()
    # for a paired one that held its check: the ratio of the sides' own medians, the independent
    # derivation a verdict must also hold at (None: not checked against one)
    reference: float | None = None

    @property
    def paired(self) -> bool:
        return self.pairs > 0

    def verdict(self, same_within: float = stats.SAME_WITHIN) -> str:
        """"contaminated" for a paired figure that failed its check: it decides nothing. An unpaired
        ratio with a side slowed by load keeps only the verdict that load could not have made: load
        only lengthens a time, so a slowed baseline can turn "slower" into nothing but "slower"."""
        if self.contaminated:
            return CONTAMINATED
        word = super().verdict(same_within)
        if self.moved_sides and word not in safe_verdicts(self.moved_sides):
            return INCONCLUSIVE
        if self.reference is not None and word != INCONCLUSIVE and word != stats.speedup_verdict(
                self.low, self.high, ratio=self.reference, same_within=same_within):
            return INCONCLUSIVE  # two derivations of one figure: a verdict needs both (unconfirmed_note)
        return word

    @property
    def withheld(self) -> bool:
        """A verdict the interval alone would give, withheld because load could have made it."""
        return bool(self.moved_sides) and super().verdict() not in (*safe_verdicts(self.moved_sides), INCONCLUSIVE)

    @property
    def method(self) -> str:
        if self.paired:
            return f"{PAIRED_METHOD}; {self.note}" if self.note else PAIRED_METHOD
        return self.note or UNPAIRED_NOTE

    def basis(self) -> str:
        """'16 pairs' or 'unpaired', for the tables."""
        return f"{self.pairs} pairs" if self.paired else "unpaired"

    def to_dict(self) -> dict[str, Any]:
        found = {"ratio": self.ratio, "ci_low": self.low, "ci_high": self.high, "verdict": self.verdict(),
                 "paired": self.paired, "pairs": self.pairs, "method": self.method}
        if self.contaminated:
            found["contaminated"] = self.contaminated
        if self.load_moved:
            found["load_moved"] = self.load_moved
        return found


def paired_ratio_ci(baseline_s: Sequence[float], candidate_s: Sequence[float],
                    confidence: float = stats.CONFIDENCE) -> SpeedupCI:
    """Median of the per-round ratios baseline / candidate, with the order-statistic interval
    of that median (distribution-free; infinite below MIN_PAIRS rounds)."""
    if len(baseline_s) != len(candidate_s) or not baseline_s:
        raise ValueError(f"paired rounds need equal, non-zero counts: {len(baseline_s)} and {len(candidate_s)}")
    ratios = sorted(b / c if c > 0 else math.inf for b, c in zip(baseline_s, candidate_s))
    low, high = stats.median_ci_presorted(ratios, confidence)
    return SpeedupCI(stats.quantile_presorted(ratios, 0.5), low, high, confidence, pairs=len(ratios))


def steady_rounds(paired: PairedSamples) -> tuple[PairedSamples, str]:
    """The rounds after the group's warm-up (runner/paired_check.py `warm_rounds`), and a note
    saying how many were left out ('' for none). The stored rounds keep them all."""
    cut = paired_check.warm_rounds(paired.baseline_s, paired.candidate_s, MIN_PAIRS) if paired.baseline_s else 0
    if not cut:
        return paired, ""
    return (dataclasses.replace(paired, baseline_s=paired.baseline_s[cut:], candidate_s=paired.candidate_s[cut:]),
            f"the first {cut} rounds were still warm-up, left out")


def checked_paired_ci(w: Wanted, paired: PairedSamples, medians: stats.RatioCI) -> SpeedupCI:
    """The paired speed-up, marked contaminated where pairing saw cross-talk or where it disagrees
    with `medians`, the ratio of the two measurements' own medians (runner/paired_check.py); where
    they agree, its interval reaches that ratio too. Rounds that were still warm-up are left out."""
    paired, warm = steady_rounds(paired)
    ratio = paired_ratio_ci(paired.baseline_s, paired.candidate_s)
    if warm:
        ratio = dataclasses.replace(ratio, note=warm)
    order = paired_check.small_order_effect(paired.baseline_s, paired.candidate_s)
    if order is not None:
        ratio = dataclasses.replace(ratio, low=min(ratio.low, order[0]), high=max(ratio.high, order[1]),
                                    note="; ".join(filter(None, (ratio.note, order[2]))))
    # a side's median moved by load (which pairing cancels) is no reference for the rounds
    stands = median_stands(w.baseline, w.baseline_phase) and median_stands(w.candidate, w.candidate_phase)
    reference = medians if stands else None
    loose = medians if not stands and w.baseline.valid and w.candidate.valid else None
    sides = ((w.baseline.spec.label(), paired.baseline_s, w.baseline.phases_s[w.baseline_phase]),
             (w.candidate.spec.label(), paired.candidate_s, w.candidate.phases_s[w.candidate_phase]))
    reason = paired.note if paired.note_kind == CROSS_TALK_KIND else paired_check.contamination(
        ratio, reference, *sides, loose=loose)
    if reason:
        return dataclasses.replace(ratio, contaminated=reason)
    if paired.note_kind == REPAIRED_KIND:
        ratio = dataclasses.replace(ratio, note="; ".join(filter(None, (paired.note, ratio.note))))
    if reference is None:
        return ratio
    if paired_check.disagreement(ratio, reference) > 1:  # it stands because a side's own measurement ran slow
        return dataclasses.replace(ratio, note="; ".join(filter(None, (ratio.note, paired_check.slow_own_measurement(*sides)))))
    # two derivations of one figure that agree only within the slack: their gap is uncertainty too
    # (a state of the machine that moved between the measurements and the rounds), so the interval
    # holds both, and a verdict needs both: the same word at either figure
    held = dataclasses.replace(ratio, low=min(ratio.low, reference.ratio), high=max(ratio.high, reference.ratio),
                               reference=reference.ratio)
    return dataclasses.replace(held, note="; ".join(filter(None, (held.note, unconfirmed_note(held)))))


def unconfirmed_note(ratio: SpeedupCI) -> str:
    """Why a paired verdict is withheld by the ratio of the sides' own medians, or ''."""
    if ratio.reference is None or ratio.verdict() != INCONCLUSIVE:
        return ""
    alone = dataclasses.replace(ratio, reference=None).verdict()
    if alone == INCONCLUSIVE:
        return ""
    at_reference = stats.speedup_verdict(ratio.low, ratio.high, ratio=ratio.reference)
    says = "too small a difference to claim" if at_reference == INCONCLUSIVE else f"{at_reference}"
    return (f"the rounds alone say {alone}, the sides' own medians give {ratio.reference:.3g}× ({says}): "
            "not decided")


def scattered_rounds(w: Wanted, paired: PairedSamples) -> str:
    """Why `paired`'s rounds scattered far more than its two plainly valid sides' own measurements
    (runner/paired_check.py `scattered`), or ''."""
    if not paired.baseline_s or not (w.baseline.trusted and w.candidate.trusted):
        return ""
    medians = bootstrap.ratio_of_medians_ci(w.baseline.phases_s[w.baseline_phase], w.candidate.phases_s[w.candidate_phase])
    steady, _ = steady_rounds(paired)
    return paired_check.scattered(paired_ratio_ci(steady.baseline_s, steady.candidate_s), medians)


def median_stands(m: Measurement, phase: str) -> bool:
    """Whether a side's own median is a reference for its paired rounds: valid, or noisy only for
    reasons that leave the compute timing as it was (a synchronisation not proven, phases that do not
    add up). Noisy from load, drift or a missed target, its median moved: no reference."""
    if m.trusted:
        return True
    if not m.valid or m.verdict != NOISY or phase != "compute":
        return False
    kinds = {kind_of(reason) for reason in m.verdict_reasons}
    return bool(kinds) and not kinds & TIMING_MOVED and "" not in kinds


def unpaired_ratio_ci(baseline_s: Sequence[float], candidate_s: Sequence[float], note: str = "") -> SpeedupCI:
    return _unpaired(bootstrap.ratio_of_medians_ci(baseline_s, candidate_s), note)


def _unpaired(r: stats.RatioCI, note: str = "") -> SpeedupCI:
    return SpeedupCI(r.ratio, r.low, r.high, r.confidence, pairs=0, note=note or UNPAIRED_NOTE)


# -- which speed-ups are shown -------------------------------------------------------------------

def cpu_baselines(valid: Iterable[Measurement]) -> tuple[dict, dict]:
    """The CPU baseline of each problem on all cores and on one core: the fastest of the CPU
    implementations measured in the run on the most threads any of them had (and on one thread, where
    more were had), chosen by measurement.

    The problem is baseline_key's: the same workload and parameters, so the same work per call and
    the compute medians compare directly; for deep learning the key holds the framework, so each is
    read against itself on the CPU. numpy keeps the place unless another is more than
    BASELINE_MARGIN faster."""
    cpu = [m for m in valid if is_baseline_measurement(m)]
    most = max((m.threads or 0 for m in cpu), default=0)
    all_cores: dict[tuple, Measurement] = {}
    one: dict[tuple, Measurement] = {}
    for m in sorted(cpu, key=lambda m: not is_cpu_baseline(m.spec.backend, m.spec.device)):  # numpy first
        if m.threads == 1 and most > 1:
            _keep_fastest(one, baseline_key(m), m)
    collapsed = {id(m) for m, _ in collapsed_baselines(cpu)}
    for m in sorted(cpu, key=lambda m: not is_cpu_baseline(m.spec.backend, m.spec.device)):  # numpy first
        # a baseline seen to use fewer cores than it claims is no "all cores" figure (results.uses_claimed_threads),
        # nor one that ran slower on all cores than on one (collapsed_baselines)
        if (m.threads or 0) == most and uses_claimed_threads(m) and id(m) not in collapsed:
            _keep_fastest(all_cores, baseline_key(m), m)
    return all_cores, one


# numpy, the reference implementation, stays the baseline unless another is faster by more than
# this: implementations of equal speed (matmul on one BLAS or another) would otherwise take turns
# from run to run with the noise, and a speed-up's baseline with them
BASELINE_MARGIN = 0.05


def _keep_fastest(chosen: dict[tuple, Measurement], key: tuple, m: Measurement) -> None:
    """chosen[key] = m where m's compute median is lower than the one there: by more than
    BASELINE_MARGIN against the reference implementation, strictly against any other."""
    there = chosen.get(key)
    if there is None:
        chosen[key] = m
        return
    margin = 1.0 + BASELINE_MARGIN if is_cpu_baseline(there.spec.backend, there.spec.device) else 1.0
    if stats.median(m.samples_s) * margin < stats.median(there.samples_s):
        chosen[key] = m


@dataclass(frozen=True)
class Wanted:
    """One speed-up a run shows: baseline phase time / candidate phase time."""

    kind: str
    baseline: Measurement
    baseline_phase: str
    candidate: Measurement
    candidate_phase: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        return (self.baseline.spec.key, self.baseline_phase, self.candidate.spec.key, self.candidate_phase)


def series_key(m: Measurement) -> tuple:
    """Everything but the dtype: a float32 measurement and a float64 one of the same series."""
    return (m.spec.workload, m.spec.backend, m.spec.device, tuple((k, v) for k, v in m.spec.params if k != "dtype"))


def wanted_speedups(measurements: Iterable[Measurement]) -> list[Wanted]:
    """Every speed-up the analysis shows, between valid measurements of one run."""
    valid = [m for m in measurements if m.valid]
    cpu_all, cpu_one = cpu_baselines(valid)
    float32 = {series_key(m): m for m in valid if m.spec.param("dtype") == "float32"}
    wanted = []
    for m in valid:
        key = baseline_key(m)
        for kind, baseline in ((CPU_ALL_CORES, cpu_all.get(key)), (CPU_ONE_THREAD, cpu_one.get(key))):
            if baseline is not None and baseline is not m:
                wanted.append(Wanted(kind, baseline, "compute", m, "compute"))
        baseline = cpu_all.get(key)
        if baseline is not None and baseline is not m and "end_to_end" in m.phases_s:
            wanted.append(Wanted(END_TO_END, baseline, "compute", m, "end_to_end"))
        fp32 = float32.get(series_key(m))
        if fp32 is not None and fp32 is not m and _compared_with_float32(m):
            wanted.append(Wanted(VS_FLOAT32, m, "compute", fp32, "compute"))
    return wanted


def _compared_with_float32(m: Measurement) -> bool:
    """What the report compares with float32: every dtype for compute-bound work (as the workload
    declares it: matmul), float64 elsewhere."""
    from accelbench.workloads.registry import role_of

    return m.spec.param("dtype") == "float64" or role_of(m) == "compute-bound"


class Speedups:
    """The ratio of each shown speed-up: paired where pairing measured it, else unpaired (marked)."""

    def __init__(self, paired: Iterable[PairedSamples] = ()) -> None:
        self._paired = {p.key: p for p in paired}

    def ratio(self, wanted: Wanted | None) -> SpeedupCI | None:
        return self.ratios([wanted])[0]

    def ratios(self, wanted: Sequence[Wanted | None],
               meanwhile: Callable[[], None] = lambda: None) -> list[SpeedupCI | None]:
        """Each wanted speed-up's ratio; the unpaired ones bootstrapped together (timing.bootstrap.ratios_of_medians_ci),
        `meanwhile` run while workers bootstrap."""
        found: list[SpeedupCI | None] = [None] * len(wanted)
        unpaired: list[tuple[int, Wanted, str]] = []
        checked: list[tuple[int, Wanted, PairedSamples]] = []
        for index, w in enumerate(wanted):
            if w is None or w.candidate_phase not in w.candidate.phases_s:
                continue
            paired = self._paired.get(w.key)
            if paired is not None and paired.baseline_s:
                checked.append((index, w, paired))
            else:
                unpaired.append((index, w, f"unpaired: {paired.note}" if paired is not None and paired.note else ""))
        # every ratio of medians, the unpaired ones shown and the paired ones' independent check
        samples = [(w.baseline.phases_s[w.baseline_phase], w.candidate.phases_s[w.candidate_phase])
                   for _, w, _ in unpaired + checked]
        medians = bootstrap.ratios_of_medians_ci(samples, meanwhile=meanwhile)
        for (index, w, note), r in zip(unpaired, medians):
            found[index] = with_load_moved(_unpaired(r, note), w)
        for (index, w, paired), r in zip(checked, medians[len(unpaired):]):
            found[index] = checked_paired_ci(w, paired, r)
        return found

    def by_candidate(self, measurements: Iterable[Measurement],
                     meanwhile: Callable[[], None] = lambda: None) -> dict[int, dict[str, SpeedupCI]]:
        """id(candidate measurement) -> {kind: its speed-up}; `meanwhile` runs while they are bootstrapped."""
        found: dict[int, dict[str, SpeedupCI]] = defaultdict(dict)
        wanted = wanted_speedups(measurements)
        for w, ratio in zip(wanted, self.ratios(wanted, meanwhile)):
            if ratio is not None:
                # a float32 row is the candidate of every other dtype: its own row shows none
                target = w.baseline if w.kind == VS_FLOAT32 else w.candidate
                found[id(target)][w.kind] = ratio
        return found
