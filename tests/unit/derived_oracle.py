"""An independent recomputation of every figure the answer states, from a results database.

Written from the definitions (docs/speedups.md, docs/results-schema.md and the docstrings of the
modules that state each figure), not from accelbench's code: it reads the raw per-sample and
per-round times from the SQLite file with `sqlite3`, and computes each figure with numpy and scipy.
Nothing here imports accelbench. tests/unit/test_derived_oracle.py compares its figures with what
`accelbench run --json`, the answer's text and `accelbench project --json` state.

The definitions, as documented:

- speed-up of a candidate against a baseline: baseline time / candidate time. Paired (stored
  rounds): first, leading warm-up rounds are left out of both sides: per side, the MSER start d
  (argmin over d <= n/2 of the sum of squared deviations of the rounds from d on, over (n - d)^2),
  taken where d >= 2, the rounds before d have a median over 3% above the rest's and a two-sided
  Mann-Whitney test (asymptotic, continuity-corrected) gives p < 0.01; the larger side's d, rounded
  up to even, at most what leaves 6 rounds. Then the median of the per-round ratios, with the order-statistic 95% interval of that median
  (Binomial(n, 1/2) ranks; none under 6 rounds). Unpaired: the ratio of the two medians, with a
  percentile-bootstrap 95% interval (each side resampled independently).
- a paired figure is contaminated when the pairing noted cross-talk, when the forward rounds' and the
  backward rounds' ratios part (medians more than 10% apart and Mann-Whitney p < 0.05; between 5% and
  10% apart, with p < 0.05, the interval is first widened to span both medians), or, where
  both sides' own medians are references (plainly valid), when the paired ratio and the ratio of
  medians lie further apart (log scale) than their two intervals' half-widths combined (hypot) plus
  10%. A figure that passes has its interval widened to reach the ratio of medians.
- verdict: a ratio in [1/1.05, 1.05] is "same" when the interval lies in [1/1.1, 1.1], else
  "inconclusive"; a ratio beyond is "faster" when the interval lies above 1, "slower" below 1, else
  "inconclusive"; "contaminated" decides nothing. A paired figure widened to the ratio of medians
  must get the same word at that ratio (with the same interval), else it is "inconclusive".
- said as "r× faster [lo–hi]", or, below 1, "(1/r)× slower [1/hi–1/lo]": the number before a
  direction word is never under 1.
- break-even: on the end-to-end speed-up of compute-bound work (matmul, float32 first) against
  problem size, the first neighbours a (< 1) and b (>= 1), interpolated on log size and log
  speed-up; stated only when a's verdict is slower and b's faster.
- transfer share: (median to_device + median to_host) / median end_to_end, at most 1.
- shares of peak: rate (FLOP/s from the median compute time, or B/s for memory-bound work) over the
  device's datasheet (table, else formula) peak, and over the best rate a plainly valid result of the
  run (matmul for FLOP/s, stream for bandwidth) or the stored inventory's measured peak reached.
- projection: efficiency = min(1, roofline time here / median time), roofline time =
  max(FLOPs / peak FLOP/s, bytes / bandwidth); projected = max(target roofline / efficiency, 5 µs).
"""
from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

CONFIDENCE = 0.95
SAME_BAND = 0.05
ORDER_GAP = 0.05           # an order effect beyond this widens the interval to both directions...
ORDER_CONTAMINATES = 0.10  # ...and beyond this contaminates
ORDER_ALPHA = 0.05
SLACK = 0.10
GROSS = 2.0  # with a side noisy, paired and medians may not stand further apart than this factor
LAUNCH_FLOOR_S = 5e-6
MIN_PAIRS = 6
ORDER_RATIO = (("vs_cpu_all_cores", "cpu_all_cores", "compute"),
               ("vs_cpu_one_core", "cpu_one_thread", "compute"),
               ("end_to_end_vs_cpu_all_cores", "end_to_end", "end_to_end"))
DATASHEETS = Path(__file__).resolve().parents[2] / "src" / "accelbench" / "data" / "datasheets.json"


# -- statistics, from their definitions ------------------------------------------------------------

def median(values) -> float:
    return float(np.median(np.asarray(values, dtype=float)))


def warm_up_rounds(values) -> int:
    """A side's leading slow rounds, by MSER with the two acceptance tests (see the module's definitions)."""
    from scipy.stats import mannwhitneyu

    x = np.asarray(values, dtype=float)
    n = len(x)
    if n < 6:
        return 0
    x = x / np.median(x)
    scores = [float(np.sum((x[d:] - x[d:].mean()) ** 2)) / (n - d) ** 2 for d in range(n // 2 + 1)]
    d = int(np.argmin(scores))  # the first of equal scores
    if d < 2 or np.median(x[:d]) <= 1.03 * np.median(x[d:]):
        return 0
    p = mannwhitneyu(x[:d], x[d:], alternative="two-sided", method="asymptotic", use_continuity=True).pvalue
    return d if p < 0.01 else 0


def warm_up_cut(baseline_s, candidate_s) -> int:
    cut = max(warm_up_rounds(baseline_s), warm_up_rounds(candidate_s))
    cut += cut % 2
    return max(0, min(cut, (min(len(baseline_s), len(candidate_s)) - MIN_PAIRS) // 2 * 2))


def order_statistic_interval(values) -> tuple[float, float]:
    """The distribution-free interval of the median: [x_(k), x_(n-1-k)] (0-based) with k the largest
    rank such that P(Binomial(n, 1/2) <= k) <= (1 - confidence) / 2."""
    from scipy.stats import binom

    data = sorted(values)
    n = len(data)
    alpha_half = (1 - CONFIDENCE) / 2
    ranks = [k for k in range(n // 2 + 1) if binom.cdf(k, n, 0.5) <= alpha_half]
    if not ranks:
        return -math.inf, math.inf
    k = max(ranks)
    return data[k], data[n - 1 - k]


BOOTSTRAP_SPREAD = 0.01  # another bootstrap's percentile end may sit this much probability away


def bootstrap_ratios(numerator, denominator, resamples: int = 20000, seed: int = 12345):
    """Bootstrap replicates of median(numerator) / median(denominator), each side resampled apart."""
    rng = np.random.default_rng(seed)
    top, bottom = np.asarray(numerator, dtype=float), np.asarray(denominator, dtype=float)
    top_medians = np.median(top[rng.integers(0, len(top), (resamples, len(top)))], axis=1)
    bottom_medians = np.median(bottom[rng.integers(0, len(bottom), (resamples, len(bottom)))], axis=1)
    return top_medians / bottom_medians


def bootstrap_ratio_interval(numerator, denominator) -> tuple[float, float, tuple[float, float, float, float]]:
    """The percentile-bootstrap 95% interval of the ratio of medians, and the band each end of an
    independent bootstrap (fewer resamples, another stream) lies in: the quantiles BOOTSTRAP_SPREAD
    either side of 2.5% and of 97.5% (4000 resamples put a percentile's own error near 0.25%)."""
    ratios = bootstrap_ratios(numerator, denominator)
    alpha = (1 - CONFIDENCE) / 2
    low, high = np.quantile(ratios, (alpha, 1 - alpha))
    band = np.quantile(ratios, (alpha - BOOTSTRAP_SPREAD, alpha + BOOTSTRAP_SPREAD,
                                1 - alpha - BOOTSTRAP_SPREAD, 1 - alpha + BOOTSTRAP_SPREAD))
    return float(low), float(high), tuple(float(x) for x in band)


def verdict(ratio: float, low: float, high: float) -> str:
    if 1 / (1 + SAME_BAND) <= ratio <= 1 + SAME_BAND:
        return "same" if 1 / (1 + 2 * SAME_BAND) <= low and high <= 1 + 2 * SAME_BAND else "inconclusive"
    if low > 1:
        return "faster"
    if high < 1:
        return "slower"
    return "inconclusive"


def log_half_width(low: float, high: float) -> float:
    if not (0 < low <= high) or math.isinf(high):
        return math.inf
    return (math.log(high) - math.log(low)) / 2


# -- what is stored -------------------------------------------------------------------------------

def spec_key(workload: str, backend: str, device: str, params: dict[str, Any]) -> str:
    return json.dumps([workload, backend, device, sorted(params.items())])


@dataclass
class Result:
    id: int
    workload: str
    backend: str
    device: str
    params: dict[str, Any]
    phases: dict[str, list[float]]
    flops: float
    bytes_moved: float
    check_passed: bool
    verdict: str
    threads: int | None
    telemetry: dict[str, Any]
    reason_kinds: frozenset = frozenset()  # the kinds of its verdict's reasons, as stored

    @property
    def key(self) -> str:
        return spec_key(self.workload, self.backend, self.device, self.params)

    @property
    def valid(self) -> bool:  # counts as a rate and a speed-up
        return self.check_passed and self.verdict != "invalid"

    @property
    def trusted(self) -> bool:  # may be a measured ceiling
        return self.valid and self.verdict == "valid"

    def median(self, phase: str = "compute") -> float:
        return median(self.phases[phase])

    @property
    def size(self) -> float | None:
        for name in ("n", "bytes"):
            if isinstance(self.params.get(name), (int, float)):
                return float(self.params[name])
        return None

    def problem(self) -> str:
        """What a CPU baseline stands for: workload and parameters without threads."""
        return json.dumps([self.workload, sorted((k, v) for k, v in self.params.items() if k != "threads")])


@dataclass
class Rounds:
    kind: str
    baseline: int
    baseline_phase: str
    candidate: int
    candidate_phase: str
    baseline_s: list[float]
    candidate_s: list[float]
    note: str
    note_kind: str   # what the note reports (schema v7): cross_talk, paired_twice or ""


@dataclass
class StoredRun:
    run_id: str
    results: list[Result]
    rounds: list[Rounds]
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)

    def by_key(self, key: str) -> Result:
        return next(r for r in self.results if r.key == key)

    def by_id(self, result_id: int) -> Result:
        return next(r for r in self.results if r.id == result_id)


def read_run(db: str | Path, run_id: str | None = None) -> StoredRun:
    """The run (the latest by start time when `run_id` is None), read with sqlite3 alone."""
    conn = sqlite3.connect(str(db))
    conn.row_factory = sqlite3.Row
    try:
        if run_id is None:
            run_id = conn.execute("SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT 1").fetchone()[0]
        results = [Result(row["id"], row["workload"], row["backend"], row["device"], json.loads(row["params_json"]),
                          json.loads(row["phases_json"]), row["flops"], row["bytes_moved"], bool(row["check_passed"]),
                          row["verdict"] or ("valid" if row["check_passed"] else "invalid"), row["threads"],
                          json.loads(row["telemetry_json"] or "{}"), _reason_kinds(row["verdict_reasons_json"]))
                   for row in conn.execute("SELECT * FROM results WHERE run_id = ? ORDER BY id", (run_id,))]
        rounds = [Rounds(row["kind"], row["baseline_result"], row["baseline_phase"], row["candidate_result"],
                         row["candidate_phase"], json.loads(row["baseline_s_json"]), json.loads(row["candidate_s_json"]),
                         row["note"], row["note_kind"])
                  for row in conn.execute("SELECT * FROM speedups WHERE run_id = ? ORDER BY id", (run_id,))]
        machine = conn.execute("SELECT inventory_json FROM machines WHERE run_id = ?", (run_id,)).fetchone()
        inventory = json.loads(machine[0]) if machine else {}
    finally:
        conn.close()
    devices = {d["id"]: d for d in inventory.get("devices", []) if isinstance(d, dict) and "id" in d}
    return StoredRun(run_id, results, rounds, devices)


# -- speed-ups ------------------------------------------------------------------------------------

def uses_its_threads(r: Result) -> bool:
    """A CPU result that claims N > 1 threads but was seen running under 0.6 N is no all-cores figure."""
    if r.device != "cpu" or not r.threads or r.threads < 2:
        return True
    seen = ((r.telemetry.get("interference") or {}).get("compute") or {})
    used = seen.get("own_demand_cores") or seen.get("own_cores")
    return not isinstance(used, (int, float)) or used >= 0.6 * r.threads


def cpu_baselines(run: StoredRun) -> tuple[dict[str, Result], dict[str, Result]]:
    """Per problem: the CPU on all cores (the most threads any CPU result had) and on one thread;
    numpy keeps the place unless another implementation is more than 5% faster."""
    cpu = [r for r in run.results if r.valid and r.device == "cpu"]
    most = max((r.threads or 0 for r in cpu), default=0)
    all_cores: dict[str, Result] = {}
    one: dict[str, Result] = {}

    def keep(chosen: dict[str, Result], r: Result) -> None:
        there = chosen.get(r.problem())
        margin = 1.05 if there is not None and there.backend == "numpy" else 1.0
        if there is None or r.median() * margin < there.median():
            chosen[r.problem()] = r

    ones = {(r.backend, r.problem()): r for r in cpu if r.threads == 1}
    for r in sorted(cpu, key=lambda r: r.backend != "numpy"):
        if (r.threads or 0) == most and uses_its_threads(r) and not collapsed(r, ones.get((r.backend, r.problem()))):
            keep(all_cores, r)
        if r.threads == 1 and most > 1:
            keep(one, r)
    return all_cores, one


def collapsed(r: Result, one: Result | None) -> bool:
    """An all-cores result slower than its one-thread twin: beyond both medians' order-statistic
    intervals, or at all where other processes disturbed it (no denominator, issue 42)."""
    if one is None or r is one or (r.threads or 0) < 2:
        return False
    mine, theirs = order_statistic_interval(r.phases["compute"]), order_statistic_interval(one.phases["compute"])
    seen = (r.telemetry.get("interference") or {}).get("compute") or {}
    return mine[0] > theirs[1] or (r.median() > one.median() and bool(seen.get("disturbed")))


@dataclass(frozen=True)
class Figure:
    """One speed-up as the oracle derives it."""

    ratio: float
    low: float          # the paired order-statistic interval, or the bootstrap one
    high: float
    paired: bool
    pairs: int
    medians_ratio: float
    medians_low: float
    medians_high: float
    cross_talk: bool = False
    order_gap: float = 0.0       # |log(forward median / backward median)|
    order_p: float = 1.0
    disagreement: float = 0.0    # distance / allowed, as defined; > 1 disagrees
    both_valid: bool = False     # both sides plainly valid: their medians are a reference
    any_noisy: bool = False      # a side is noisy: its median may or may not be a reference
    band: tuple[float, float, float, float] = (-math.inf, math.inf, -math.inf, math.inf)  # unpaired ends' bands
    shifts: tuple[float, float] = (1.0, 1.0)   # each side's rounds median / its own median
    moved: frozenset = frozenset()  # unpaired: the sides whose median load moved (moved_sides)

    def keeps(self, word: str) -> bool:
        """Whether an unpaired verdict stands with its moved sides: load only lengthens a time, so a
        slowed baseline can only make "slower" of nothing, a slowed candidate only "faster"."""
        if not self.moved or word == "inconclusive":
            return True
        return (self.moved == {"baseline"} and word == "slower") or (self.moved == {"candidate"} and word == "faster")

    @property
    def slow_own(self) -> bool:
        """No side slower in the rounds than in its own measurement (beyond SLACK), one faster: its own
        measurement ran slow, and the paired figure stands."""
        return max(self.shifts) <= 1 + SLACK and min(self.shifts) < 1 / (1 + SLACK)

    @property
    def order_effect(self) -> bool:
        return self.order_gap > math.log1p(ORDER_CONTAMINATES) and self.order_p < ORDER_ALPHA

    @property
    def contaminated(self) -> bool | None:
        """True / False where the definition decides; None where it depends on which noisy reasons
        leave a median standing (docs/speedups.md: 'a noisy side's median ... is no reference')."""
        if not self.paired:
            return False
        if self.cross_talk or self.order_effect:
            return True
        if self.both_valid:
            return self.disagreement > 1 and not self.slow_own
        if self.any_noisy and self.gross and not self.slow_own:
            return True
        if self.any_noisy and self.disagreement > 1:
            return None
        return False

    @property
    def gross(self) -> bool:
        """Paired figure and ratio of medians more than GROSS apart."""
        if not (self.ratio > 0 and self.medians_ratio > 0):
            return True
        return abs(math.log(self.ratio / self.medians_ratio)) > math.log(GROSS)

    def near_a_threshold(self, margin: float = 0.15) -> bool:
        """Whether the contamination decision sits so close to a threshold that a different
        bootstrap stream could flip it."""
        if not self.paired:
            return False
        near_gap = any(abs(self.order_gap - math.log1p(gap)) < margin * math.log1p(gap)
                       for gap in (ORDER_GAP, ORDER_CONTAMINATES))
        near_p = abs(self.order_p - ORDER_ALPHA) < margin * ORDER_ALPHA
        near_order = (near_gap and self.order_p < ORDER_ALPHA) or (near_p and self.order_gap > math.log1p(ORDER_GAP))
        return near_order or abs(self.disagreement - 1) < margin


# the kinds of noisy reason that can only lengthen a time (load, warm-up left in, bursts), and those
# that move it either way (a trend, a changed state, a reason of no known kind): docs/speedups.md
ONLY_SLOWS = frozenset({"own_threads", "cpu_wait", "hypervisor", "other_processes", "device_shared",
                        "device_slowed", "warmup", "bursts"})
EITHER_WAY = frozenset({"drift", "state_changed", ""})


def _reason_kinds(stored: str | None) -> frozenset:
    items = json.loads(stored or "[]")
    return frozenset(item.get("kind", "") if isinstance(item, dict) else "" for item in items)


def moved_sides(baseline: Result, candidate: Result) -> frozenset:
    """The sides of an unpaired ratio whose own median load moved: a noisy side with a reason that only
    slows; both sides where any noisy side's reasons leave the direction open (or name none)."""
    moved, either = set(), False
    for side, r in (("baseline", baseline), ("candidate", candidate)):
        if r.verdict != "noisy":
            continue
        if not r.reason_kinds or r.reason_kinds & EITHER_WAY:
            moved.add(side)
            either = True
        elif r.reason_kinds & ONLY_SLOWS:
            moved.add(side)
    return frozenset({"baseline", "candidate"}) if either else frozenset(moved)


def speedup(run: StoredRun, baseline: Result, baseline_phase: str, candidate: Result, candidate_phase: str,
            rounds: Rounds | None) -> Figure:
    from scipy.stats import mannwhitneyu

    own_b, own_c = baseline.phases[baseline_phase], candidate.phases[candidate_phase]
    medians_ratio = median(own_b) / median(own_c)
    m_low, m_high, band = bootstrap_ratio_interval(own_b, own_c)
    if rounds is None or not rounds.baseline_s:
        return Figure(medians_ratio, m_low, m_high, False, 0, medians_ratio, m_low, m_high, band=band,
                      moved=moved_sides(baseline, candidate))
    cut = warm_up_cut(rounds.baseline_s, rounds.candidate_s)
    rounds_b, rounds_c = rounds.baseline_s[cut:], rounds.candidate_s[cut:]
    ratios = [b / c for b, c in zip(rounds_b, rounds_c)]
    low, high = order_statistic_interval(ratios)
    ratio = median(ratios)
    forward, backward = ratios[0::2], ratios[1::2]
    gap, p = 0.0, 1.0
    if len(forward) >= 4 and len(backward) >= 4:
        gap = abs(math.log(median(forward) / median(backward)))
        p = float(mannwhitneyu(forward, backward, alternative="two-sided", method="asymptotic",
                               use_continuity=True).pvalue)
        if math.log1p(ORDER_GAP) < gap <= math.log1p(ORDER_CONTAMINATES) and p < ORDER_ALPHA:
            directions = (median(forward), median(backward))
            low, high = min(low, *directions), max(high, *directions)
    allowed = math.hypot(log_half_width(low, high), log_half_width(m_low, m_high)) + math.log1p(SLACK)
    distance = abs(math.log(ratio) - math.log(medians_ratio))
    return Figure(ratio, low, high, True, len(ratios), medians_ratio, m_low, m_high,
                  cross_talk=rounds.note_kind == "cross_talk", order_gap=gap, order_p=p,
                  disagreement=distance / allowed if math.isfinite(allowed) else 0.0,
                  both_valid=baseline.verdict == "valid" and candidate.verdict == "valid",
                  any_noisy="noisy" in (baseline.verdict, candidate.verdict),
                  shifts=(median(rounds_b) / median(own_b), median(rounds_c) / median(own_c)))


@dataclass(frozen=True)
class Expected:
    """A speed-up the run must show, with where it is shown."""

    field: str           # the --json field under derived.speedups
    kind: str
    shown_on: Result
    baseline: Result
    baseline_phase: str
    candidate: Result
    candidate_phase: str
    figure: Figure


def expected_speedups(run: StoredRun) -> list[Expected]:
    """Every speed-up against the CPU the run shows (docs/results-schema.md's fields), recomputed."""
    all_cores, one = cpu_baselines(run)
    stored = {(r.baseline, r.baseline_phase, r.candidate, r.candidate_phase): r for r in run.rounds}
    found = []
    for r in run.results:
        if not r.valid:
            continue
        for name, kind, phase in ORDER_RATIO:
            baseline = (one if kind == "cpu_one_thread" else all_cores).get(r.problem())
            if baseline is None or baseline is r or phase not in r.phases:
                continue
            rounds = stored.get((baseline.id, "compute", r.id, phase))
            found.append(Expected(name, kind, r, baseline, "compute", r, phase,
                                  speedup(run, baseline, "compute", r, phase, rounds)))
    float32 = {json.dumps([r.workload, r.backend, r.device, sorted((k, v) for k, v in r.params.items()
                                                                    if k != "dtype")]): r
               for r in run.results if r.valid and r.params.get("dtype") == "float32"}
    for r in run.results:
        fp32 = float32.get(json.dumps([r.workload, r.backend, r.device,
                                       sorted((k, v) for k, v in r.params.items() if k != "dtype")]))
        if r.valid and fp32 is not None and fp32 is not r and (r.params.get("dtype") == "float64"
                                                               or r.workload == "matmul"):
            rounds = stored.get((r.id, "compute", fp32.id, "compute"))
            found.append(Expected("float32_vs_this_dtype", "vs_float32", r, r, "compute", fp32, "compute",
                                  speedup(run, r, "compute", fp32, "compute", rounds)))
    return found


# -- break-even, transfer share -------------------------------------------------------------------

def crossing_size(size_a: float, ratio_a: float, size_b: float, ratio_b: float) -> float:
    t = -math.log(ratio_a) / (math.log(ratio_b) - math.log(ratio_a))
    return math.exp(math.log(size_a) + t * (math.log(size_b) - math.log(size_a)))


def transfer_share(r: Result) -> float | None:
    if "end_to_end" not in r.phases or not ({"to_device", "to_host"} & set(r.phases)):
        return None
    moved = sum(median(r.phases[p]) for p in ("to_device", "to_host") if p in r.phases)
    return min(1.0, moved / median(r.phases["end_to_end"]))


# -- shares of peak -------------------------------------------------------------------------------

VECTOR = {"float64": "fp64", "float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def rate(r: Result) -> tuple[float, str]:
    """(rate, unit): FLOP/s where the work is FLOPs with intensity above 1 FLOP/byte, else B/s."""
    if r.flops and (not r.bytes_moved or r.flops / r.bytes_moved > 1):
        return r.flops / r.median(), "FLOP/s"
    return r.bytes_moved / r.median(), "B/s"


def peak_metric(r: Result, device: dict[str, Any] | None) -> str | None:
    """matmul is read against its dtype's matrix peak where the device has one, else the vector
    peak; stream, reduce and elementwise against memory bandwidth."""
    if r.workload in ("stream", "reduce", "elementwise"):
        return "memory_bandwidth"
    if r.workload != "matmul" or str(r.params.get("dtype")) not in VECTOR:
        return None
    vector = VECTOR[str(r.params["dtype"])]
    metrics = {p["metric"] for p in (device or {}).get("peaks", [])}
    return f"{vector}_matrix" if f"{vector}_matrix" in metrics else vector


def device_peak(device: dict[str, Any] | None, metric: str, provenance: str) -> float | None:
    for p in (device or {}).get("peaks", []):
        if p.get("metric") == metric and p.get("provenance") == provenance and p.get("value"):
            return float(p["value"])
    return None


def measured_best(run: StoredRun, device_id: str, metric: str, threads: int | None = None) -> float | None:
    """The best rate a plainly valid matmul (FLOP/s) or stream (bandwidth) result of the run reached
    on the device with the same threads (its configuration), or, for the most threads the run had
    there, the inventory's stored measured peak, whichever is higher."""
    device = run.devices.get(device_id)
    most = max(((r.threads or 0) for r in run.results if r.device == device_id), default=0) or None
    found = [device_peak(device, metric, "measured") or 0.0] if threads == most else []
    for r in run.results:
        ceiling = "stream" if metric == "memory_bandwidth" else "matmul"
        if (r.trusted and r.device == device_id and r.workload == ceiling and peak_metric(r, device) == metric
                and r.threads == threads):
            value, _ = rate(r)
            found.append(value)
    return max(found, default=0.0) or None


def peak_shares(run: StoredRun, r: Result) -> tuple[float | None, float | None]:
    """(share of the best measured rate, share of the datasheet/formula peak) of a valid result."""
    if not r.valid:
        return None, None
    device = run.devices.get(r.device)
    metric = peak_metric(r, device)
    value, unit = rate(r)
    if metric is None or (unit == "B/s") != (metric == "memory_bandwidth"):
        return None, None
    sheet = device_peak(device, metric, "table") or device_peak(device, metric, "formula")
    best = measured_best(run, r.device, metric, r.threads) if r.trusted else None  # a noisy rate: no share
    return (value / best if best else None), (value / sheet if sheet else None)


# -- projections ----------------------------------------------------------------------------------

def datasheet_row(key: str) -> dict[str, Any]:
    aliases = {"h100": "h100-sxm", "h200": "h200-sxm", "a100": "a100-sxm4-80gb"}
    rows = json.loads(DATASHEETS.read_text(encoding="utf-8"))["rows"]
    return next(row for row in rows if row["key"] == aliases.get(key, key))


def target_peak(row: dict[str, Any], metrics: tuple[str, ...]) -> float | None:
    for metric in metrics:
        if metric in row["peaks_tera"]:
            return row["peaks_tera"][metric] * 1e12 / row.get("devices_per_package", 1)
    return None


def flops_metrics(workload: str, dtype: str) -> tuple[str, ...]:
    """The FLOP/s peak a result is projected with: matmul on matrix units where its dtype has them
    (fp32 stays on the vector units: no TF32), other work on the vector units, first found."""
    vector = VECTOR[dtype]
    return (f"{vector}_matrix", vector) if workload == "matmul" and vector != "fp32" else (vector, f"{vector}_matrix")


@dataclass(frozen=True)
class Projected:
    measured_s: float
    efficiency: float
    roofline_s: float
    projected_s: float
    lower_bound: bool
    source_flops: float | None
    source_bandwidth: float | None

    @property
    def speedup(self) -> float:
        return self.measured_s / self.projected_s


def project(run: StoredRun, r: Result, target_key: str) -> Projected | None:
    """None where the definition gives no projection: not valid, copies over the host link, no work
    model, or no source or target ceiling for a term that has work."""
    if not r.valid or r.workload == "memcpy" or not (r.flops or r.bytes_moved):
        return None
    row = datasheet_row(target_key)
    device = run.devices.get(r.device)
    source_flops = target_flops = source_bw = target_bw = None
    if r.flops:
        if str(r.params.get("dtype")) not in VECTOR:
            return None
        metrics = flops_metrics(r.workload, str(r.params["dtype"]))
        source_flops = next((v for prov in ("table", "formula") for m in metrics
                             if (v := device_peak(device, m, prov))), None)
        target_flops = target_peak(row, metrics)
        if source_flops is None or target_flops is None:
            return None
    if r.bytes_moved:
        source_bw = device_peak(device, "memory_bandwidth", "table") or device_peak(device, "memory_bandwidth",
                                                                                  "formula")
        if source_bw is None:  # the best STREAM rate of the run on that device, never the result's own
            streams = [s for s in run.results if s.trusted and s.workload == "stream" and s.device == r.device]
            best = max(streams, key=lambda s: rate(s)[0], default=None)
            source_bw = rate(best)[0] if best is not None and best is not r else None
        target_bw = target_peak(row, ("memory_bandwidth",))
        if source_bw is None or target_bw is None:
            return None
    measured = r.median()
    here = max(r.flops / source_flops if r.flops else 0.0, r.bytes_moved / source_bw if r.bytes_moved else 0.0)
    there = max(r.flops / target_flops if r.flops else 0.0, r.bytes_moved / target_bw if r.bytes_moved else 0.0)
    efficiency = min(1.0, here / measured)
    roofline = there / efficiency
    return Projected(measured, efficiency, roofline, max(roofline, LAUNCH_FLOOR_S), roofline < LAUNCH_FLOOR_S,
                     source_flops, source_bw)
