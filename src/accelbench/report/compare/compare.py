"""Compare two runs spec by spec: ratio of medians with its 95% interval, a tested verdict, a summary.

For every spec measured (and verified) in both runs the speed-up is baseline time / candidate time
(> 1: run B is faster), bootstrapped from the raw samples. The verdict needs three things to agree:

* "faster" / "slower": a change beyond the threshold `same_within` (default 10%, asv's factor 1.1):
  the point estimate lies outside 1 ± `same_within`, the interval excludes 1, *and* a two-sided
  Mann-Whitney test on the raw samples rejects "no difference" at `alpha` in the same direction;
  *and* the interval lies wholly outside the spec's run-to-run noise band (compare/noise.py: from
  the spec's stored history on this host, else from the two runs themselves, floor ±5%; widened by
  the machine reference where both runs carry one, compare/machine.py): the
  within-run interval says nothing about how much a spec moves between identical runs. A change
  that fails only this is "inconclusive", noted "within run-to-run noise (±x%, source)";
* "same": the whole interval lies within 1 ± `same_within`, or the point estimate does and the
  interval stays within twice the band — any real change is smaller than the threshold;
* "inconclusive": anything else (a wide interval, too few samples, the two tests disagree).

Results invalid in either run (a failed check, an impossible rate, ...) count nowhere: listed as
excluded. A noisy result never carries a faster/slower verdict: that spec is inconclusive (noisy).
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from statistics import NormalDist

from accelbench.report.compare import metadata
from accelbench.report.compare import noise as run_noise
from accelbench.report.compare.common_shift import CommonShift, code_shifts
from accelbench.report.compare.machine import MachineShift, ci_text, machine_shift, ratio_text
from accelbench.report.data import RunData
from accelbench.results import Measurement, Spec
from accelbench.report.summary import spec_label
from accelbench.timing import bootstrap, stats

SAME_WITHIN = 0.10
ALPHA = 0.05
MIN_SAMPLES = 6  # below this the order-statistic interval of a median does not exist at 95%
VERDICTS = ("same", "slower", "faster", "inconclusive")


@dataclass(frozen=True)
class SpecComparison:
    """One spec in both runs. `verdict` is one of VERDICTS or "excluded" (with `note` saying why)."""

    spec: Spec
    verdict: str
    median_a_s: float | None = None
    median_b_s: float | None = None
    n_a: int = 0
    n_b: int = 0
    speedup: stats.RatioCI | None = None   # time A / time B
    p_value: float | None = None           # Mann-Whitney, two-sided
    note: str = ""
    result_verdicts: tuple[str, str] = ("", "")  # each side's own verdict (valid, noisy, ...)
    noise: run_noise.NoiseBand | None = None   # the run-to-run noise band the change had to clear
    within_noise: bool = False                 # a change the within-run test saw, inside that band

    @property
    def label(self) -> str:
        return spec_label(self.spec)

    @property
    def counted(self) -> bool:
        return self.verdict in VERDICTS

    def factor_text(self) -> str:
        """"1.31× slower" / "1.20× faster" / "1.00×", from the point estimate (never "0.76× slower")."""
        return "—" if self.speedup is None else ratio_text(self.speedup.ratio)

    def slowdown_fraction(self) -> float:
        """How much longer B takes than A (0.31 for 1.31× slower); 0 when not slower."""
        if self.speedup is None or self.speedup.ratio >= 1:
            return 0.0
        return 1 / self.speedup.ratio - 1

    def to_dict(self) -> dict:
        ci = self.speedup
        return {"spec": self.spec.to_dict(), "label": self.label, "verdict": self.verdict, "note": self.note,
                "median_a_s": self.median_a_s, "median_b_s": self.median_b_s, "n_a": self.n_a, "n_b": self.n_b,
                "speedup": None if ci is None else {"ratio": ci.ratio, "ci_low": ci.low, "ci_high": ci.high,
                                                    "confidence": ci.confidence},
                "p_value": self.p_value, "result_verdict_a": self.result_verdicts[0],
                "result_verdict_b": self.result_verdicts[1],
                "noise": None if self.noise is None else self.noise.to_dict(), "within_noise": self.within_noise,
                "verdict_text": self.verdict_text()}

    def verdict_text(self) -> str:
        """The verdict with its factor in the one convention: "slower: 3.17× slower [3.05–3.30×]"."""
        return self.verdict if self.speedup is None else f"{self.verdict}: {ci_text(self.speedup)}"

    def why_slower(self) -> str:
        """Why a "slower" verdict stands: its interval, the noise band it cleared, the rank test."""
        ci, band = self.speedup, self.noise
        if ci is None:
            raise ValueError(f"{self.label}: a {self.verdict} comparison has no interval to explain")
        cleared = "" if band is None else f", outside the run-to-run noise band {band.text()}"
        return (f"{self.factor_text()}, 95% interval [{1 / ci.high:.3f}–{1 / ci.low:.3f}]× the time{cleared}, "
                f"Mann–Whitney p={self.p_value:.2g}")

    def survives_noise(self) -> bool:
        """A faster/slower verdict: its interval cleared the run-to-run noise band."""
        return self.verdict in ("faster", "slower")


def verdict_of(ci: stats.RatioCI, test: stats.MannWhitney, *, same_within: float = SAME_WITHIN,
               alpha: float = ALPHA) -> str:
    """Combine the interval's reading with the rank test: a claimed difference needs both."""
    band_low, band_high = 1 / (1 + same_within), 1 + same_within
    if band_low <= ci.low and ci.high <= band_high:
        return "same"
    direction = "faster" if ci.ratio > 1 else "slower"
    excludes_one = ci.low > 1 or ci.high < 1
    beyond_band = not band_low <= ci.ratio <= band_high
    if beyond_band and excludes_one and test.verdict(alpha) == direction:
        return direction
    if not beyond_band and 1 / (1 + 2 * same_within) <= ci.low and ci.high <= 1 + 2 * same_within:
        return "same"
    return "inconclusive"


def compare_measurements(a: Measurement, b: Measurement, *, same_within: float = SAME_WITHIN,
                         alpha: float = ALPHA, note: str = "",
                         noise: run_noise.NoiseBand | None = run_noise.FLOOR_ONLY) -> SpecComparison:
    """The verdict for one spec measured as `a` in the baseline run and `b` in the candidate; a
    faster/slower verdict also needs its interval to clear the run-to-run `noise` band."""
    spec = a.spec
    failed = [f"check failed in run {name}" + (f": {m.check.detail}" if m.check.detail else "")
              if not m.check.passed else f"invalid in run {name}: {m.verdict_reasons[0] if m.verdict_reasons else ''}"
              for name, m in (("A", a), ("B", b)) if not m.valid]
    if failed:
        return SpecComparison(spec, "excluded", note="; ".join(failed), result_verdicts=(a.verdict, b.verdict))
    median_a, median_b = stats.median(a.samples_s), stats.median(b.samples_s)
    n_a, n_b = len(a.samples_s), len(b.samples_s)
    if median_a <= 0 or median_b <= 0:
        return SpecComparison(spec, "excluded", median_a, median_b, n_a, n_b, note="a median time of zero: no ratio")
    if a.threads != b.threads:  # what the BLAS really ran with, read back during the measurement
        note = _join(note, f"threads read back: {a.threads} in A, {b.threads} in B")
    ci = bootstrap.speedup_ci(a.samples_s, b.samples_s)
    test = stats.mann_whitney(a.samples_s, b.samples_s)
    verdict = verdict_of(ci, test, same_within=same_within, alpha=alpha)
    if min(n_a, n_b) < MIN_SAMPLES:
        verdict, note = "inconclusive", _join(note, f"too few samples for a verdict (need {MIN_SAMPLES})")
    noisy = [name for name, m in (("A", a), ("B", b)) if m.verdict != "valid"]
    if noisy and verdict in ("faster", "slower"):  # a disturbed measurement never carries a verdict
        verdict = "inconclusive"
        note = _join(note, f"inconclusive (noisy): run {' and '.join(noisy)} not valid ("
                           + "; ".join(f"{m.verdict}: {m.verdict_reasons[0]}" for name, m in (("A", a), ("B", b))
                                       if name in noisy and m.verdict_reasons) + ")")
    within_noise = verdict in ("faster", "slower") and noise is not None and not noise.clears(ci)
    if within_noise and noise is not None:  # a change of the size identical runs show on this machine is not a finding
        verdict, note = "inconclusive", _join(note, f"within run-to-run noise ({noise.text()})")
    return SpecComparison(spec, verdict, median_a, median_b, n_a, n_b, within_noise=within_noise, speedup=ci,
                          p_value=test.p_value, note=note, result_verdicts=(a.verdict, b.verdict), noise=noise)


def _join(*notes: str) -> str:
    return "; ".join(n for n in notes if n)


def geometric_mean(rows: list[SpecComparison], confidence: float = stats.CONFIDENCE, *,
                   beyond_noise_only: bool = True) -> stats.RatioCI | None:
    """The geometric mean speed-up over counted specs, with an interval.

    With `beyond_noise_only` (the default) only changes that survived the noise band (a faster or
    slower verdict) enter at their ratio; every other counted spec enters as 1.0, no change shown:
    two identical runs then give 1.000× however much their medians drifted. Each spec's bootstrap
    interval is read as a normal interval on the log scale (its standard error is the
    log-width / 2z) and the specs as independent, so the mean of k logs has standard error
    sqrt(sum se²) / k. Specs of one run share a machine state, so this interval is a lower bound on
    the real uncertainty when whole runs drift.
    """
    counted = [r.speedup if r.survives_noise() or not beyond_noise_only else stats.RatioCI(1.0, 1.0, 1.0)
               for r in rows if r.counted and r.speedup is not None]
    if not counted:
        return None
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    logs = [math.log(ci.ratio) for ci in counted]
    errors = [(math.log(ci.high) - math.log(ci.low)) / (2 * z) for ci in counted]
    centre = math.fsum(logs) / len(logs)
    spread = z * math.sqrt(math.fsum(e * e for e in errors)) / len(errors)
    return stats.RatioCI(math.exp(centre), math.exp(centre - spread), math.exp(centre + spread), confidence)


# -- matching the two runs' specs ----------------------------------------------------------------

def _without_threads(spec: Spec) -> str:
    return Spec(spec.workload, spec.backend, spec.device,
                tuple(p for p in spec.params if p[0] != "threads")).key


def _threads(m: Measurement) -> int | None:
    value = m.spec.param("threads")
    return None if value is None else int(value)


def _all_cores(measurements: list[Measurement]) -> dict[str, Measurement]:
    """CPU specs run on every thread their run used (more than one), keyed without the count."""
    most: dict[str, int] = {}
    for m in measurements:
        threads = _threads(m)
        if threads is not None:
            key = _without_threads(m.spec)
            most[key] = max(most.get(key, 0), threads)
    return {_without_threads(m.spec): m for m in measurements
            if _threads(m) is not None and _threads(m) == most[_without_threads(m.spec)] > 1}


def match_specs(a: list[Measurement], b: list[Measurement]
                ) -> tuple[list[tuple[Measurement, Measurement, str]], list[Spec], list[Spec]]:
    """Pairs by Spec.key; then "all cores" CPU specs whose thread counts differ (another machine).

    Returns (pairs with a note, specs only in A, specs only in B). A spec measured twice in one run
    keeps its last measurement.
    """
    by_key_a = {m.spec.key: m for m in a}
    by_key_b = {m.spec.key: m for m in b}
    pairs = [(by_key_a[k], by_key_b[k], "") for k in by_key_a if k in by_key_b]
    rest_a = {k: m for k, m in by_key_a.items() if k not in by_key_b}
    rest_b = {k: m for k, m in by_key_b.items() if k not in by_key_a}
    wide_a, wide_b = _all_cores(list(by_key_a.values())), _all_cores(list(by_key_b.values()))
    for key, ma in wide_a.items():
        mb = wide_b.get(key)
        if mb is None or ma.spec.key not in rest_a or mb.spec.key not in rest_b:
            continue
        pairs.append((ma, mb, f"all cores: {_threads(ma)} threads in A, {_threads(mb)} in B"))
        del rest_a[ma.spec.key], rest_b[mb.spec.key]
    return pairs, [m.spec for m in rest_a.values()], [m.spec for m in rest_b.values()]


# -- the comparison ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Comparison:
    """Run B (candidate) against run A (baseline): per-spec verdicts, a summary, what differs."""

    a: RunData
    b: RunData
    rows: tuple[SpecComparison, ...]
    only_a: tuple[Spec, ...]
    only_b: tuple[Spec, ...]
    differences: tuple[metadata.MetadataDifference, ...]
    same_machine: bool
    geomean: stats.RatioCI | None
    same_within: float = SAME_WITHIN
    alpha: float = ALPHA
    geomean_all: stats.RatioCI | None = None   # every counted ratio, noise or not (for reference)
    machine: MachineShift | None = None        # both runs' machine references (None: not both have one)
    common_shift: float | None = None          # the median speed-up of all usable specs (time A / time B)

    def by_verdict(self, verdict: str) -> list[SpecComparison]:
        return [r for r in self.rows if r.verdict == verdict]

    def counts(self) -> dict[str, int]:
        return {v: len(self.by_verdict(v)) for v in (*VERDICTS, "excluded")}

    def slower_than(self, fraction: float) -> list[SpecComparison]:
        """Significant slowdowns (verdict "slower") whose point estimate exceeds `fraction` (0.1: 10%)."""
        return [r for r in self.by_verdict("slower") if r.slowdown_fraction() > fraction]

    def noise_text(self) -> str:
        """Which run-to-run noise estimates the verdicts used, and from how many runs."""
        return run_noise.summary([r.noise for r in self.rows if r.noise is not None])["text"]

    @property
    def scope(self) -> str:
        if self.same_machine:
            return f"same machine ({self.a.hostname})"
        return f"ACROSS MACHINES: {self.a.hostname or '?'} → {self.b.hostname or '?'}"

    def summary_line(self, shown: int = 3) -> str:
        """"12 same, 1 slower (matmul numpy@cpu n=2000: 1.31× slower), 0 faster, 2 inconclusive"."""
        parts = [f"{len(self.by_verdict('same'))} same"]
        for verdict in ("slower", "faster"):
            rows = sorted(self.by_verdict(verdict), key=_change_size, reverse=True)
            detail = ", ".join(f"{r.label}: {r.factor_text()}" for r in rows[:shown])
            if len(rows) > shown:
                detail += f" and {len(rows) - shown} more"
            parts.append(f"{len(rows)} {verdict}" + (f" ({detail})" if detail else ""))
        within = sum(r.within_noise for r in self.rows)
        parts.append(f"{len(self.by_verdict('inconclusive'))} inconclusive"
                     + (f" ({within} within run-to-run noise)" if within else ""))
        excluded = len(self.by_verdict("excluded"))
        line_machine = self.machine_text()
        line = ", ".join(parts) + (f"; {excluded} excluded (check failed or invalid)" if excluded else "")
        every = self.geomean_all
        every_text = "" if every is None else f"all ratios {ci_text(every)}"
        if self.geomean is not None and any(r.survives_noise() for r in self.rows):
            line += (f"; geometric mean {ci_text(self.geomean)} counting only changes "
                     f"beyond run-to-run noise ({every_text})")
        elif every is not None and not (self.code_shift is not None and self.code_shift.codes):
            line += f"; no change beyond run-to-run noise: geometric mean 1.00× ({every_text})"
        return line + f"; {line_machine}" + ("" if self.same_machine else f" — {self.scope}")

    @cached_property
    def code_shift(self) -> CommonShift | None:
        """The specs' common shift set against the machine reference (compare/common_shift.py): the first
        that is the code's (all specs, then the multi-thread ones), else that of all specs."""
        shifts = code_shifts(self.rows, self.machine)
        return next((s for s in shifts if s.codes), shifts[0] if shifts else None)

    def machine_text(self) -> str:
        """What the machine reference says about the pair's common shift (or that there is none)."""
        found = self.code_shift
        return self._reference_text() + ("" if found is None else f"; {found.text()}")

    def _reference_text(self) -> str:
        m, common = self.machine, self.common_shift
        if m is None:
            return ("the gate has no machine reference (a run or export without one in A or B): a shift of the "
                    "whole machine cannot be told from the code's, so a shift shared by all specs counts as noise")
        if not m.moved:
            return f"machine reference steady ({m.text()}): a shift shared by all specs is the code's"
        if common is not None and m.agrees_with(math.log(common)):
            return (f"this machine ran {ratio_text(common)} during B (machine reference {ratio_text(m.speedup)}): "
                    "the shift cannot be told from the code's")
        shown = "" if common is None else f"; the specs' common shift {ratio_text(common)} is not the machine's"
        return f"the machine itself moved ({m.text()}): every band is widened by it{shown}"

    def to_dict(self) -> dict:
        g = self.geomean
        return {
            "a": {"run_id": self.a.run_id, "source": self.a.source, "hostname": self.a.hostname},
            "b": {"run_id": self.b.run_id, "source": self.b.source, "hostname": self.b.hostname},
            "same_machine": self.same_machine, "same_within": self.same_within, "alpha": self.alpha,
            "counts": self.counts(), "summary": self.summary_line(),
            "geometric_mean_speedup": _ci_dict(g), "geometric_mean_speedup_all_ratios": _ci_dict(self.geomean_all),
            "noise": run_noise.summary([r.noise for r in self.rows if r.noise is not None]),
            "machine_reference": None if self.machine is None else self.machine.to_dict(),
            "machine_text": self.machine_text(),
            "common_shift": self.common_shift,
            "common_shift_text": None if self.common_shift is None else ratio_text(self.common_shift),
            "code_shift": None if self.code_shift is None else self.code_shift.to_dict(),
            "rows": [r.to_dict() for r in self.rows],
            "only_in_a": [s.to_dict() for s in self.only_a], "only_in_b": [s.to_dict() for s in self.only_b],
            "metadata_differences": [d.to_dict() for d in self.differences],
        }

    def _repr_html_(self) -> str:
        from accelbench.report.compare.html import comparison_html

        return comparison_html(self)

    def __repr__(self) -> str:
        from accelbench.report.compare.html import comparison_text

        return comparison_text(self)


def _ci_dict(ci: stats.RatioCI | None) -> dict | None:
    return None if ci is None else {"ratio": ci.ratio, "ci_low": ci.low, "ci_high": ci.high, "text": ci_text(ci)}


def compare_runs(a: RunData, b: RunData, *, same_within: float = SAME_WITHIN, alpha: float = ALPHA,
                 history: Mapping[str, list[float]] | None = None) -> Comparison:
    """Compare run B (candidate) with run A (baseline), spec by spec.

    `history`: spec key -> its medians in earlier runs of this machine (run B excluded), for the
    noise bands; by default read from the database run B came from, when both runs are of one machine.
    """
    if not 0 < same_within < 1:
        raise ValueError(f"same_within must be within (0, 1), got {same_within}")
    pairs, only_a, only_b = match_specs(list(a.measurements), list(b.measurements))
    devices = {ma.spec.device for ma, _, _ in pairs}
    differences, same_machine = tuple(metadata.differences(a, b, devices)), metadata.same_machine(a, b)
    if history is None:
        history = _stored_history(a, b, [ma.spec.key for ma, _, _ in pairs]) if same_machine else {}
    machine = machine_shift(a, b)
    bands = run_noise.bands([(ma, mb) for ma, mb, _ in pairs], history,
                            shift_is_noise=same_machine and not differences, machine=machine)
    rows = [compare_measurements(ma, mb, same_within=same_within, alpha=alpha, note=note,
                                 noise=bands.get(ma.spec.key)) for ma, mb, note in pairs]
    return Comparison(a=a, b=b, rows=tuple(rows), only_a=tuple(only_a), only_b=tuple(only_b),
                      differences=differences, same_machine=same_machine, geomean=geometric_mean(rows),
                      same_within=same_within, alpha=alpha,
                      geomean_all=geometric_mean(rows, beyond_noise_only=False), machine=machine,
                      common_shift=_common_shift(rows))


def _common_shift(rows: list[SpecComparison]) -> float | None:
    """The median speed-up of the counted specs: what the pair as a whole moved by."""
    ratios = [r.speedup.ratio for r in rows if r.counted and r.speedup is not None and r.speedup.ratio > 0]
    return math.exp(stats.median([math.log(x) for x in ratios])) if ratios else None


def _stored_history(a: RunData, b: RunData, spec_keys: list[str]) -> dict[str, list[float]]:
    """From the results database run B was read from (none for a run read from a file)."""
    if not run_noise.is_database(b.source):
        return {}
    return run_noise.stored_history(b.source, a.hostname, spec_keys, candidate_run_id=b.run_id,
                                    started_until=b.started_at)


def _change_size(comparison: SpecComparison) -> float:
    """How far from 1 the speed-up is, either way (0 without one)."""
    return abs(math.log(comparison.speedup.ratio)) if comparison.speedup is not None else 0.0
