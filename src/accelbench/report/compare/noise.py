"""How far a spec's median moves between identical runs on one machine: the run-to-run noise band.

A within-run interval says how well one run pinned its median down, not how much the next run of
the same code will differ (placement, clocks, neighbours, memory layout): two identical runs on a
shared machine can differ by 2× with p-values of 1e-18. A faster/slower verdict therefore needs the
interval of the ratio to lie wholly outside ±band around 1, where the band comes from, in order:

* history: the spec's medians in the earlier stored runs of the same host (at least
  MIN_HISTORY_RUNS of them, run A included, run B never): band = t·√2·s, s the standard deviation
  of their log medians, √2 because a change is the difference of two runs, t Student's quantile for
  k − 1 degrees of freedom (s from 4 runs is itself uncertain: t = 9.2 there, 3.3 from 30 runs);
  floor HISTORY_FLOOR, since history can prove a spread smaller than the pair floor; widened by
  the pair's common shift (below) when the runs match in machine and settings;
* pair: the two runs themselves: the log ratios of all specs of the pair with the same workload and
  backend@device (else the same device, else all specs: at least MIN_GROUP_SPECS):
  band = |median| + q·1.4826·MAD, q for the group's size k (PAIR_MULTIPLIER: q = 3 would let a spec
  of 6 cross it 2.3% of the time, not 0.3%, since a MAD of 6 values is itself uncertain). The median is the common shift: if everything moved by 1.2×
  with nothing recorded to explain it, a 1.2× change is not a finding for any one spec. When the
  runs differ in machine or recorded settings, that shift may be the finding, so only the scatter
  counts. Floor PAIR_FLOOR;
* floor: too few specs and too little history to estimate: ±PAIR_FLOOR.

With a machine reference on both runs (compare/machine.py), the common-shift rule and the short-call
floor below are replaced by measurement: the band is the spec's own (history, else its group's scatter,
shift not counted) widened by what the reference, in the part the spec's work resembles, cannot rule
out (its shift between the runs plus its own spread). A shift the machine did not make is then found.

Without a long history, a band is never narrower than short_call_floor(the spec's time per call): a call
of microseconds moves between processes by its memory placement, clocks and neighbours' bursts, a
shift constant within a run (so its interval is tight) that a few specs of a pair show and the
group's robust scatter ignores. A/A pairs on shared 2-core VMs (benchmarks/aa_compare.py, the
compare CLI tests) moved 10 µs matmuls up to 1.98×, 50-200 µs ones up to 1.45×, while calls of
10 ms and more stayed within the pair band; layout alone can bias a timing by tens of percent
(Mytkowicz et al., "Producing Wrong Data Without Doing Anything Obviously Wrong!", ASPLOS 2009).
A history of HISTORY_REPLACES_FLOOR runs or more measures the spec's own spread and replaces this
floor; a shorter one does not: four quiet runs of a 17 µs matmul were followed by a fifth 1.67×
slower on such a VM, a jump that hits one run in several and that four runs cannot show.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from statistics import NormalDist

from accelbench.report.compare.machine import MachineShift
from accelbench.results import Measurement
from accelbench.timing import stats
from accelbench.units import format_seconds

# 99.7% of identical-run changes lie within the band (normal model): a pair compares tens of specs,
# so at 95% most A/A pairs would still show a false change somewhere. Both multipliers hold that
# rate for a spread estimated from few values (the plain 3σ holds it only for a known spread).
Z = 3.0
# Student's t at 99.865% by degrees of freedom (scipy.stats.t.ppf); beyond, a Cornish-Fisher series
T_QUANTILE = {3: 9.22, 4: 6.62, 5: 5.51, 6: 4.9, 7: 4.53, 8: 4.28, 9: 4.09, 10: 3.96, 11: 3.85, 12: 3.76,
              13: 3.69, 14: 3.64, 15: 3.59, 16: 3.54, 17: 3.51, 18: 3.48, 19: 3.45, 20: 3.42, 21: 3.4,
              22: 3.38, 23: 3.36, 24: 3.34, 25: 3.33, 26: 3.32, 27: 3.3, 28: 3.29, 29: 3.28}
PAIR_TABLE_UP_TO = 40
ROBUST_SIGMA = 1.4826    # MAD × this estimates σ of a normal distribution
PAIR_FLOOR = 0.05        # a band estimated from two runs, or none, is never under ±5%
HISTORY_FLOOR = 0.01     # history may prove a smaller spread; no claim finer than ±1%
MIN_HISTORY_RUNS = 4
HISTORY_REPLACES_FLOOR = 10  # runs of history that may show a short call's rare jumps (below: the floor stays)
SHORT_CALL_S = 0.01        # calls shorter than this get a wider floor without a long history ...
SHORT_CALL_EXPONENT = 0.45  # ... PAIR_FLOOR × (SHORT_CALL_S / t)^0.45: ±14% at 1 ms, ±40% at 100 µs
SHORT_CALL_CAP = 2.0        # ±200%: a call of a microsecond is compared through its history only
MIN_GROUP_SPECS = 4
# an odd group's median is one of its values, which makes its MAD smaller: hence the zigzag
PAIR_MULTIPLIER = {  # group size k -> q (benchmarks/noise_band_calibration.py, 1,000,000 groups each)
    4: 9.79, 5: 11.83, 6: 6.72, 7: 7.09, 8: 5.45, 9: 5.57, 10: 4.79, 11: 4.83, 12: 4.39, 13: 4.42,
    14: 4.13, 15: 4.15, 16: 3.95, 17: 3.96, 18: 3.81, 19: 3.82, 20: 3.7, 21: 3.72, 22: 3.63, 23: 3.63,
    24: 3.56, 25: 3.56, 26: 3.51, 27: 3.5, 28: 3.46, 29: 3.46, 30: 3.41, 31: 3.42, 32: 3.38, 33: 3.39,
    34: 3.35, 35: 3.36, 36: 3.33, 37: 3.33, 38: 3.31, 39: 3.31, 40: 3.29,
}


def pair_multiplier(k: int) -> float:
    """q of the pair band for a group of k specs (beyond the table: 3 + 11/k, which meets it at 40)."""
    return PAIR_MULTIPLIER.get(k) or Z + 11.0 / k


def t_quantile(df: int) -> float:
    """Student's t at 99.865% (two-sided 3σ) for df ≥ 3 degrees of freedom."""
    return T_QUANTILE.get(df) or stats.t_quantile(NormalDist().cdf(Z), df)


@dataclass(frozen=True)
class NoiseBand:
    """A ratio within [1/(1+fraction), 1+fraction] is what identical runs show for this spec."""

    fraction: float
    source: str            # "history" | "pair" | "floor"
    runs: int              # runs the estimate comes from
    specs: int = 1         # specs it comes from (pair: the group's size)
    estimate: float | None = None   # the estimate before the floor (None: no estimate)
    detail: str = ""
    # how the all-cores probe beside the spec moved from A to B (log, time A / time B), where both runs
    # took one (_with_machine; compare/common_shift.py reads it)
    probe_shift_log: float | None = None
    raised_for_short_call: bool = False  # _with_short_call_floor raised it (its detail says by how much)

    def clears(self, ci: stats.RatioCI) -> bool:
        """The whole interval lies outside the band: a change larger than identical runs show."""
        return ci.low > 1 + self.fraction or ci.high < 1 / (1 + self.fraction)

    def text(self) -> str:
        """"±6.1%, history: 7 runs" / "±5.0%, pair: 8 specs of 2 runs (estimate ±2.3%, floor 5%)"."""
        if self.source == "history":
            where = f"history: {self.runs} runs of this spec"
        elif self.source == "pair":
            where = f"pair: {self.specs} specs of these 2 runs"
        else:
            where = "floor: too few specs and runs to estimate"
        floored = "" if self.estimate is None or self.estimate >= self.fraction else (
            f", estimate ±{self.estimate:.1%} raised to the floor")
        return f"±{self.fraction:.1%}, {where}{floored}"

    def short(self) -> str:
        """For a table cell: "±4.2% history (6 runs)", "±44.4% pair (8 specs)", "±5.0% floor"."""
        how = {"history": f"history ({self.runs} runs)", "pair": f"pair ({self.specs} specs)"}.get(self.source, "floor")
        return f"±{self.fraction:.1%} {how}"

    def to_dict(self) -> dict:
        return {"band": self.fraction, "source": self.source, "runs": self.runs, "specs": self.specs,
                "estimate": self.estimate, "detail": self.detail, "text": self.text()}


def _mad(values: list[float], centre: float) -> float:
    return stats.median([abs(v - centre) for v in values])


def history_band(medians_s: list[float]) -> NoiseBand | None:
    """From a spec's medians in earlier runs of this host; None with fewer than MIN_HISTORY_RUNS."""
    logs = [math.log(m) for m in medians_s if m > 0]
    if len(logs) < MIN_HISTORY_RUNS:
        return None
    mean = math.fsum(logs) / len(logs)
    sigma = math.sqrt(math.fsum((v - mean) ** 2 for v in logs) / (len(logs) - 1))
    estimate = math.expm1(t_quantile(len(logs) - 1) * math.sqrt(2) * sigma)
    return NoiseBand(max(HISTORY_FLOOR, estimate), "history", len(logs), estimate=estimate,
                     detail=f"spread (SD) of its medians ±{math.expm1(sigma):.1%} per run")


def pair_band(log_ratios: list[float], group: str, *, shift_is_noise: bool) -> NoiseBand:
    """From the log speed-ups of a group of specs of the two runs being compared."""
    centre = stats.median(log_ratios)
    scatter = ROBUST_SIGMA * _mad(log_ratios, centre)
    estimate = math.expm1((abs(centre) if shift_is_noise else 0.0) + pair_multiplier(len(log_ratios)) * scatter)
    shift = (f"common shift {math.exp(centre):.3f}× counted as noise" if shift_is_noise else
             f"common shift {math.exp(centre):.3f}× not counted (the runs differ in recorded settings or machine)")
    return NoiseBand(max(PAIR_FLOOR, estimate), "pair", 2, specs=len(log_ratios), estimate=estimate,
                     detail=f"{len(log_ratios)} specs of {group}: {shift}, robust scatter ±{math.expm1(scatter):.1%}")


FLOOR_ONLY = NoiseBand(PAIR_FLOOR, "floor", 2, specs=0, detail=f"fewer than {MIN_GROUP_SPECS} comparable specs")


def short_call_floor(call_s: float) -> float:
    """The narrowest band, without history, for a spec whose calls take `call_s` seconds."""
    if call_s >= SHORT_CALL_S:
        return PAIR_FLOOR
    return min(SHORT_CALL_CAP, PAIR_FLOOR * (SHORT_CALL_S / max(call_s, 1e-9)) ** SHORT_CALL_EXPONENT)


def _with_short_call_floor(band: NoiseBand, call_s: float) -> NoiseBand:
    floor = short_call_floor(call_s)
    if floor <= band.fraction:
        return band
    return dataclasses.replace(band, fraction=floor, raised_for_short_call=True, detail=(
        f"{band.detail}; raised to ±{floor:.0%} for a call of {format_seconds(call_s)} (calls under "
        f"{format_seconds(SHORT_CALL_S)} move more between runs than a pair or a short history shows; "
        f"{HISTORY_REPLACES_FLOOR} runs of history replace this)"))


def _with_common_shift(band: NoiseBand, centre: float, specs: int, group: str) -> NoiseBand:
    """A history band widened by the pair's common shift, as the pair band counts it: the spec's own
    history says how it varies when the machine holds still, not what a whole run moved by. In CI a
    fifth run of ten sub-millisecond matmuls came out 1.29× slower throughout (nothing recorded to
    explain it), and two of them, 1.44× and 1.50×, had cleared a band from four quiet runs."""
    if centre == 0.0:
        return band
    fraction = math.expm1(math.log1p(band.fraction) + abs(centre))
    return dataclasses.replace(band, fraction=fraction, detail=(
        f"{band.detail}; plus the common shift {math.exp(centre):.3f}× of {specs} specs of {group} "
        "in these 2 runs, counted as noise"))


def _with_machine(band: NoiseBand, machine: MachineShift, a: Measurement, b: Measurement) -> NoiseBand:
    """The spec's own band widened by what the machine cannot be ruled out to have done: the shift and
    tolerance of the reference part its work resembles, plus those of the all-cores probe beside it
    where both runs took one. Replaces the common-shift rule and the short-call floor."""
    parts = machine.for_pair(a, b)
    fraction = math.expm1(math.log1p(band.fraction) + sum(part.allowance_log for part, _ in parts))
    allows = "; ".join(f"plus what the {name} allows: {part.text()}" for part, name in parts)
    return dataclasses.replace(band, fraction=fraction, estimate=None, detail=f"{band.detail}; {allows}",
                               probe_shift_log=parts[1][0].shift_log if len(parts) > 1 else None)


def _groups(m: Measurement) -> tuple[tuple[tuple[str, ...], str], ...]:
    """The groups a spec's pair estimate may come from, narrowest first."""
    s = m.spec
    return (((s.workload, s.backend, s.device), f"{s.workload} {s.backend}@{s.device}"),
            ((s.device,), f"device {s.device}"), ((), "the whole pair"))


def bands(pairs: Iterable[tuple[Measurement, Measurement]], history: Mapping[str, list[float]], *,
          shift_is_noise: bool, machine: MachineShift | None = None) -> dict[str, NoiseBand]:
    """A's spec key -> its noise band, for every pair whose results are both usable (not invalid).

    With a `machine` reference on both runs, the band is the spec's own measured spread (history,
    else the scatter of its group) widened by what the reference cannot rule out, never by the
    specs' common shift nor by the short-call floor."""
    usable = [(a, b) for a, b in pairs if a.valid and b.valid and a.samples_s and b.samples_s
              and stats.median(a.samples_s) > 0 and stats.median(b.samples_s) > 0]
    log_ratio = {a.spec.key: math.log(stats.median(a.samples_s) / stats.median(b.samples_s)) for a, b in usable}
    members: dict[tuple[str, ...], list[float]] = {}
    # with a machine reference the scatter is learnt from undisturbed results only: a noisy result
    # carries no verdict, and its swing (a neighbour's burst) is not what an undisturbed spec shows
    clean = {a.spec.key for a, b in usable if machine is None or (a.verdict == "valid" and b.verdict == "valid")}
    for a, _ in usable:
        if a.spec.key not in clean:
            continue
        for key, _label in _groups(a):
            members.setdefault(key, []).append(log_ratio[a.spec.key])
    found: dict[str, NoiseBand] = {}
    for a, b in usable:
        group = next(((key, label) for key, label in _groups(a) if len(members.get(key, ())) >= MIN_GROUP_SPECS),
                     None)
        call_s = min(stats.median(a.samples_s), stats.median(b.samples_s))
        band = history_band(history.get(a.spec.key, []))
        if machine is not None:
            own = band or (pair_band(members[group[0]], group[1], shift_is_noise=False) if group else FLOOR_ONLY)
            found[a.spec.key] = _with_machine(own, machine, a, b)
            continue
        if band is None:
            band = pair_band(members[group[0]], group[1], shift_is_noise=shift_is_noise) if group else FLOOR_ONLY
            band = _with_short_call_floor(band, call_s)
        else:  # the spec's own spread (floored while the history is short), then the run's shift
            if band.runs < HISTORY_REPLACES_FLOOR:
                band = _with_short_call_floor(band, call_s)
            if group and shift_is_noise:
                band = _with_common_shift(band, stats.median(members[group[0]]), len(members[group[0]]), group[1])
        found[a.spec.key] = band
    return found


def stored_history(db: str | None, hostname: str, spec_keys: Iterable[str], *, candidate_run_id: str,
                   started_until: str) -> dict[str, list[float]]:
    """Each spec's medians in the earlier runs of `hostname` stored in `db` ({} when there is no
    database or the candidate's start time is unknown): run B itself never counts."""
    from accelbench.errors import UsageError
    from accelbench.store.db import Store
    from accelbench.store.history import spec_medians
    from accelbench.store.opening import NoDatabaseError

    if not hostname or not started_until:
        return {}
    try:
        with Store(db, create=False) as store:
            return spec_medians(store, hostname, spec_keys, started_until=started_until,
                                exclude_run_ids=(candidate_run_id,))
    except (NoDatabaseError, UsageError):
        return {}


def is_database(path: str) -> bool:
    """An SQLite file (a run read from the results database, not from an exported JSON file)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def _span(values: list[float], fmt: str) -> str:
    low, high = min(values), max(values)
    return format(low, fmt) if low == high else f"{format(low, fmt)}–{format(high, fmt)}"


def summary(bands_used: list[NoiseBand]) -> dict:
    """Which estimates the comparison used, how many specs each, from how many runs; with a text."""
    if not bands_used:
        return {"text": "no spec compared: no run-to-run noise band", "sources": {}}
    by_source = {s: [b for b in bands_used if b.source == s] for s in ("history", "pair", "floor")}
    parts = []
    if by_source["history"]:
        found = by_source["history"]
        parts.append(f"{len(found)} spec(s) from their stored history ({_span([b.runs for b in found], 'd')} runs each)")
    if by_source["pair"]:
        found = by_source["pair"]
        parts.append(f"{len(found)} from the log ratios of these 2 runs ({_span([b.specs for b in found], 'd')} "
                     "specs per group, robust median and MAD)")
    if by_source["floor"]:
        parts.append(f"{len(by_source['floor'])} at the floor (too few specs to estimate)")
    widened = sum(b.raised_for_short_call for b in bands_used)
    if widened:
        parts.append(f"{widened} widened for calls under {format_seconds(SHORT_CALL_S)} ({HISTORY_REPLACES_FLOOR} runs of history replace that)")
    floors = f"floor ±{PAIR_FLOOR:.0%} (±{HISTORY_FLOOR:.0%} where history proves less)"
    text = (f"run-to-run noise band ±{_span([b.fraction * 100 for b in bands_used], '.1f')}%: "
            + "; ".join(parts) + f"; {floors}")
    return {"text": text, "sources": {s: len(found) for s, found in by_source.items() if found},
            "band_min": min(b.fraction for b in bands_used), "band_max": max(b.fraction for b in bands_used),
            "pair_floor": PAIR_FLOOR, "history_floor": HISTORY_FLOOR, "min_history_runs": MIN_HISTORY_RUNS}
