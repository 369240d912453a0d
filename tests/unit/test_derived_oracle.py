"""Every derived figure the answer states, recomputed from the stored results by an independent path.

tests/unit/derived_oracle.py reads the raw per-sample and per-round times from the SQLite file and
recomputes each figure from its definition (numpy, scipy; no accelbench code). Here it is compared
with what accelbench states: `run --json` (each result's derived figures and the headline), the
answer's text, and `project --json`. Two sources of stored results: a synthetic run written through
accelbench's Store (paired, unpaired, contaminated and too-few-rounds speed-ups, end-to-end phases,
a device faster end to end only above some size, a tiny problem under the launch floor), and one
real small run through the CLI (numpy against PoCL's OpenCL, marked slow).

Tolerances, per figure (relative unless said):
- RATIO: a speed-up's ratio, paired (median of per-round ratios) or unpaired (ratio of medians): 1e-9,
  the same arithmetic on the same stored numbers.
- ORDER_STATISTIC: a paired interval's ends (order statistics of the stored ratios, widened to reach
  the ratio of medians where the definition says so): 1e-9.
- BOOTSTRAP: an unpaired interval's ends, two independent Monte Carlo bootstraps: each end within the
  oracle's own bootstrap quantiles 1% either side of its percentile (2.5%, 97.5%), or its log
  within max(BOOTSTRAP_SHARE × the interval's log half-width, BOOTSTRAP_FLOOR).
- BREAK_EVEN: the stated "n ≈ N", rounded to an integer: 1e-3.
- SHARE: transfer shares and shares of peak in --json: 1e-9; said in words as a whole percent: ±0.5
  percentage points (plus 1e-9).
- PROJECTION: every figure of a projection: 1e-9.
- SAID: a number in the text, three significant figures: 1%.
"""
from __future__ import annotations

import contextlib
import io
import json
import math
import re
from dataclasses import replace

import derived_oracle as oracle
import pytest
from synthetic_runs import BREAK_EVEN_SIZES, CPU, GPU, break_even_measurements, measurement

from accelbench.devices.model import PeakFigure
from accelbench.results import PairedSamples

RATIO = 1e-9
ORDER_STATISTIC = 1e-9
BOOTSTRAP_SHARE, BOOTSTRAP_FLOOR = 0.35, 0.003
BREAK_EVEN = 1e-3
SHARE = 1e-9
SAID_PERCENT = 0.5
PROJECTION = 1e-9
SAID = 0.01
TARGET = "h100"

NUMBER = r"(∞|\d[\d,]*(?:\.\d+)?)"
DIRECTED = re.compile(NUMBER + r"× (faster|slower) \[" + NUMBER + "–" + NUMBER + r"(?:, (?:\d+ pairs|unpaired))?\]")
# an interval whose ends lie more than WIDE apart is no figure (docs/speedups.md): a decided one says
# only the bound it is sure of, an undecided one "not measurable here"
WIDE = 2.0
AT_LEAST = re.compile(r"at least " + NUMBER + r"× (faster|slower) \(not measurable more closely here")


def _wide(low: float, high: float) -> bool:
    return not (low > 0 and math.isfinite(low) and math.isfinite(high)) or high / low > WIDE


def _close(a: float | None, b: float | None, rel: float) -> bool:
    if a is None or b is None:
        return a is b
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rel * max(abs(a), abs(b))


def _end(value: float | None, infinity: float) -> float:
    return infinity if value is None else value


def _number(text: str) -> float:
    return math.inf if text == "∞" else float(text.replace(",", ""))


def _main(*argv: str) -> tuple[int, str]:
    from accelbench.cli.main import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(list(argv))
    return code, out.getvalue()


# -- the synthetic run ----------------------------------------------------------------------------

def _rounds(baseline_s: float, candidate_s: float, count: int = 12, *, candidate_scale: float = 1.0,
            backward_scale: float = 1.0, warm: int = 0) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Per-round seconds: a load coming and going that hits both sides alike (it cancels in each
    ratio), a ±0.4% jitter of each side's own, and what a test plants: the candidate `candidate_scale`
    slower in every round, `backward_scale` slower in the backward rounds (baseline second), and 1.4×
    slower in its first `warm` rounds (a warm-up that outlasted the untimed round)."""
    baseline, candidate = [], []
    for i in range(count):
        load = 1 + 0.1 * ((i * 7) % 5)
        baseline.append(baseline_s * load * (1 + 0.002 * ((i * 3) % 5 - 2)))
        candidate.append(candidate_s * load * (1 + 0.002 * ((i * 2 + 1) % 5 - 2)) * candidate_scale
                         * (backward_scale if i % 2 else 1.0) * (1.4 if i < warm else 1.0))
    return tuple(baseline), tuple(candidate)


def _synthetic_measurements():
    ms = list(break_even_measurements())
    ms += [
        # a problem under one kernel launch on the target: its projection is the launch floor
        measurement("matmul", "torch", "cuda:0", compute_s=2e-5, to_device_s=1e-5, to_host_s=5e-6, n=64,
                    dtype="float32"),
        # float64 on the GPU: a float32_vs_this_dtype figure, and no fp64 peak to project it with
        measurement("matmul", "torch", "cuda:0", compute_s=1.08, n=3000, dtype="float64"),
        # the CPU's bandwidth, measured: the ceiling its matmul projections use for their bytes
        measurement("stream", "numpy", "cpu", compute_s=0.020, threads=2, kernel="triad", n=1 << 24, dtype="float64"),
        measurement("stream", "numpy", "cpu", compute_s=0.030, threads=1, kernel="triad", n=1 << 24, dtype="float64"),
        # the GPU's small reduction 1% faster than the CPU's: its rounds (planted 8% faster) alone would
        # say "faster"; the ratio of medians says a difference too small to claim, so nothing is decided
        measurement("reduce", "numpy", "cpu", compute_s=0.002, threads=2, n=1 << 22, dtype="float32"),
        measurement("reduce", "torch", "cuda:0", compute_s=0.002 / 1.01, n=1 << 22, dtype="float32"),
        # a reduction faster than the GPU's datasheet bandwidth: its efficiency is capped at 100%
        measurement("reduce", "torch", "cuda:0", compute_s=4e-4, n=1 << 26, dtype="float32"),
        # the fastest matmul rate of the run (400 GFLOP/s), but noisy: no measured ceiling
        replace(measurement("matmul", "torch", "cuda:0", compute_s=0.04, n=2000, dtype="float32"), verdict="noisy",
                verdict_reasons=("other processes used 40% of the cores",)),
    ]
    # one baseline noisy for a reason that moves timings: its median is no reference for the rounds
    return [replace(m, verdict="noisy", verdict_reasons=("other processes used 40% of the cores",))
            if m.spec.backend == "numpy" and m.spec.param("n") == 1000 and m.threads == 1 else m for m in ms]


def _find(ms, backend: str, n: int, threads: int | None = None, workload: str = "matmul", dtype: str = "float32"):
    return next(m for m in ms if m.spec.backend == backend and m.spec.param("n") == n and m.threads == threads
                and m.spec.workload == workload and m.spec.param("dtype") == dtype)


def _median(m, phase: str = "compute") -> float:
    return oracle.median(m.phases_s[phase])


def _paired(ms) -> list[PairedSamples]:
    """The stored rounds: honest ones, and each way a paired figure is contaminated or not paired."""
    found = []

    def pair(kind, baseline, candidate, phase="compute", note="", count=12, note_kind="", **planted):
        b, c = _rounds(_median(baseline), _median(candidate, phase), count, **planted)
        found.append(PairedSamples(kind, baseline.spec, "compute", candidate.spec, phase, b, c, note, note_kind))

    for n in BREAK_EVEN_SIZES:
        every, one, gpu = _find(ms, "numpy", n, 2), _find(ms, "numpy", n, 1), _find(ms, "torch", n)
        # n=1000: its side noisy; n=1500: the order of the sides matters a little (7%): the interval spans both
        pair("cpu_all_cores", every, one, candidate_scale=1.3 if n == 1000 else 1.0,
             backward_scale=1.07 if n == 1500 else 1.0)
        if n != max(BREAK_EVEN_SIZES):
            pair("cpu_one_thread", one, every)
        else:
            pair("cpu_one_thread", one, every, count=5)  # too few rounds for a 95% interval
        if n == 1500:
            pair("cpu_all_cores", every, gpu, backward_scale=1.3)  # the order of the sides matters
        elif n == 2500:
            pair("cpu_all_cores", every, gpu, candidate_scale=1.05)  # within the slack: the interval widens
        elif n == 3000:
            pair("cpu_all_cores", every, gpu, count=16, warm=4)  # its first 4 rounds still warm-up: left out
        else:
            pair("cpu_all_cores", every, gpu)
        if n == 1000:
            pair("cpu_one_thread", one, gpu, note="cross-talk: matmul [torch@cuda:0] n=1000: 1 of its blocks "
                                                  "started while 1 other thread(s) of ours still ran",
                 note_kind="cross_talk")
        elif n == 2500:
            pair("cpu_one_thread", one, gpu, candidate_scale=1.5)  # the rounds disagree with the medians
        # n=3000 against one core: no rounds stored at all (unpaired)
        if n == max(BREAK_EVEN_SIZES):
            found.append(PairedSamples("end_to_end", every.spec, "compute", gpu.spec, "end_to_end",
                                       note="not paired: its blocks are too long for the pairing budget"))
        else:
            pair("end_to_end", every, gpu, "end_to_end")
    cpu, gpu = (next(m for m in ms if m.spec.workload == "reduce" and m.spec.param("n") == 1 << 22
                     and m.spec.backend == name) for name in ("numpy", "torch"))
    pair("cpu_all_cores", cpu, gpu, candidate_scale=1 / 1.08)
    return found


# the GPU with a formula fp32 peak beside its datasheet one (the datasheet's is read first) and a
# measured one stored from an earlier run (above the run's own best: the share is of the higher)
GPU_PEAKS = replace(GPU, peaks=GPU.peaks + (PeakFigure("fp32", 12e12, "formula", "cores × clock × 2"),
                                            PeakFigure("fp32", 300e9, "measured", "an earlier run")))


def _machine():
    return {"hostname": "oracle-test", "inventory": {"devices": [CPU.to_dict(), GPU_PEAKS.to_dict()]}}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    """The synthetic run stored in a real SQLite file; the `run --json` document accelbench states for
    it (the session's own serialisation), its answer's rendered text, and `project --json`."""
    from accelbench.report.data import devices_from_machine
    from accelbench.session import RunResults
    from accelbench.store.db import Store

    db = tmp_path_factory.mktemp("oracle") / "synthetic.sqlite"
    ms = _synthetic_measurements()
    with Store(db) as store:
        run_id = store.start_run(_machine(), {"workloads": ["matmul", "stream", "reduce"]})
        store.add_results(run_id, ms)
        for paired in _paired(ms):
            store.add_speedup(run_id, paired)
        store.finish_run(run_id, "complete")
    with Store(db) as store:
        machine = store.machine(run_id)
        results = RunResults(run_id, str(db), store.results(run_id), store.skips(run_id),
                             devices=devices_from_machine(machine), machine=machine, rigor="standard",
                             paired=store.speedups(run_id))
        document = json.loads(json.dumps(results.to_dict()))
    code, out = _main("project", run_id, "--to", TARGET, "--json", "--db", str(db))
    assert code == 0, out
    return {"db": db, "run": oracle.read_run(db, run_id), "json": document, "answer": results.headline().lines(),
            "project": json.loads(out), "summary": _summary_text(results)}


def _summary_text(results) -> str:
    from rich.console import Console

    from accelbench.report.summary import render_summary

    out = io.StringIO()
    render_summary(results.rows, results.skips, Console(file=out, width=250, color_system=None))
    return out.getvalue()


# -- the comparisons, shared by both runs ----------------------------------------------------------

def _stated(document, result: oracle.Result) -> dict:
    return next(e for e in document["results"] if oracle.spec_key(e["spec"]["workload"], e["spec"]["backend"],
                                                                    e["spec"]["device"], e["spec"]["params"]) == result.key)


def _bootstrap_close(stated: float, recomputed: float, low: float, high: float, band: tuple[float, float]) -> bool:
    """Within the percentile band of the oracle's bootstrap, or close in value (see BOOTSTRAP)."""
    if math.isinf(stated) or math.isinf(recomputed):
        return stated == recomputed
    if band[0] * (1 - 1e-12) <= stated <= band[1] * (1 + 1e-12):
        return True
    allowed = max(BOOTSTRAP_SHARE * oracle.log_half_width(low, high), BOOTSTRAP_FLOOR)
    return abs(math.log(stated) - math.log(recomputed)) <= allowed


def check_speedup(stated: dict | None, expected: oracle.Expected) -> list[str]:
    """Where `stated` (a --json speed-up) disagrees with the oracle's figure; [] when it agrees."""
    f = expected.figure
    what = f"{expected.field} of {expected.shown_on.key}"
    if stated is None:
        return [f"{what}: not stated"]
    wrong = []
    low, high = _end(stated["ci_low"], -math.inf), _end(stated["ci_high"], math.inf)
    if stated["paired"] != f.paired or stated["pairs"] != f.pairs:
        wrong.append(f"{what}: paired {stated['paired']} ({stated['pairs']} pairs), recomputed {f.paired} ({f.pairs})")
    if not _close(stated["ratio"], f.ratio, RATIO):
        wrong.append(f"{what}: ratio {stated['ratio']!r}, recomputed {f.ratio!r}")
    contaminated = bool(stated["contaminated"])
    decided = f.contaminated
    if decided is not None and not f.near_a_threshold() and contaminated != decided:
        wrong.append(f"{what}: contaminated {contaminated}, by definition {decided} (order gap {f.order_gap:.3f}, "
                     f"p {f.order_p:.3g}, disagreement {f.disagreement:.2f}, cross-talk {f.cross_talk})")
    if decided is None and contaminated and not (f.cross_talk or f.order_effect or f.disagreement > 1):
        wrong.append(f"{what}: contaminated without a reason the definition gives")
    if f.paired:
        plain = (f.low, f.high)
        widened = (min(f.low, f.medians_ratio), max(f.high, f.medians_ratio))
        # a figure standing only because a side's own measurement ran slow keeps its own interval
        stands_alone = f.both_valid and f.disagreement > 1 and f.slow_own
        allowed = ([plain] if contaminated or stands_alone or not (f.both_valid or f.any_noisy) else
                   [widened] if f.both_valid else [plain, widened])
        if not any(_close(low, a, ORDER_STATISTIC) and _close(high, b, ORDER_STATISTIC) for a, b in allowed):
            wrong.append(f"{what}: interval [{low!r}, {high!r}], recomputed one of {allowed}")
    else:
        if not (_bootstrap_close(low, f.low, f.low, f.high, f.band[:2])
                and _bootstrap_close(high, f.high, f.low, f.high, f.band[2:])):
            wrong.append(f"{what}: interval [{low!r}, {high!r}], bootstrapped again [{f.low!r}, {f.high!r}]")
    if not low <= f.ratio <= high:
        wrong.append(f"{what}: the interval [{low}, {high}] does not contain the recomputed {f.ratio}")
    word = "contaminated" if contaminated else oracle.verdict(f.ratio, low, high)
    if not f.keeps(word):  # unpaired, with a side load moved: a direction it could have made is withheld
        word = "inconclusive"
    words = {word}
    if not contaminated and f.paired and (f.both_valid or f.any_noisy) and not (f.both_valid and f.disagreement > 1):
        # widened to the ratio of medians (for a noisy side: perhaps): a verdict needs the same word there
        both = word if oracle.verdict(f.medians_ratio, low, high) == word else "inconclusive"
        words = {both} if f.both_valid else {word, both}
    if stated["verdict"] not in words:
        wrong.append(f"{what}: verdict {stated['verdict']}, by its interval {' or '.join(sorted(words))}")
    wrong += check_said(stated["text"], stated["ratio"], low, high, stated["verdict"], what)
    return wrong


def check_said(text: str, ratio: float, low: float, high: float, word: str, what: str) -> list[str]:
    """The one convention: "r× faster [lo–hi]" above 1, "(1/r)× slower [1/hi–1/lo]" below; an
    undecided figure keeps the plain ratio and no direction word."""
    found = DIRECTED.findall(text)
    if word in ("faster", "slower") and _wide(low, high):
        bound = AT_LEAST.findall(text)
        near = low if word == "faster" else 1 / high
        if found or len(bound) != 1 or bound[0][1] != word or not _close(_number(bound[0][0]), near, SAID):
            return [f"{what}: {text!r} does not say 'at least {near:.3g}× {word}' alone for an interval "
                    f"spanning {high / low:.1f}-fold"]
        return []
    if word == "inconclusive" and _wide(low, high) and "not decided" not in text:
        return [] if "not measurable here" in text and not found else [
            f"{what}: {text!r} gives a figure for an interval spanning more than {WIDE:g}-fold"]
    if word in ("faster", "slower"):
        if len(found) != 1 or found[0][1] != word:
            return [f"{what}: {text!r} does not say {word} once"]
        value, _, a, b = found[0]
        want = (ratio, low, high) if word == "faster" else (1 / ratio, 1 / high, 1 / low)
        said = (_number(value), _number(a), _number(b))
        if not all(_close(s, w, SAID) for s, w in zip(said, want)) or said[0] < 1:
            return [f"{what}: {text!r} says {said}, the convention gives {want}"]
        return []
    if found:
        return [f"{what}: {text!r} gives a direction to a {word} figure"]
    return []


def check_answer_convention(texts) -> list[str]:
    """No ratio under 1 before a direction word anywhere in the answer: "3.17× slower", never "0.32× slower"."""
    wrong = []
    for text in texts:
        for value, word, *_ in DIRECTED.findall(text):
            if _number(value) < 1:
                wrong.append(f"{value}× {word} in {text!r}")
        for match in re.finditer(r"(?<![\d.])(0\.\d+)× (faster|slower)", text):
            wrong.append(f"{match.group(0)} in {text!r}")
    return wrong


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def check_all_speedups(run: oracle.StoredRun, document) -> tuple[list[str], list[oracle.Expected]]:
    """Each speed-up the definitions call for is stated, agrees, and no other one is stated."""
    expected = oracle.expected_speedups(run)
    wrong = []
    for e in expected:
        wrong += check_speedup(_stated(document, e.shown_on)["derived"]["speedups"][e.field], e)
    wanted = {(e.shown_on.key, e.field) for e in expected}
    for entry in document["results"]:
        key = oracle.spec_key(entry["spec"]["workload"], entry["spec"]["backend"], entry["spec"]["device"],
                              entry["spec"]["params"])
        for name, figure in entry["derived"]["speedups"].items():
            if figure is not None and (key, name) not in wanted:
                wrong.append(f"{name} of {key}: stated, but no speed-up of that kind is defined there")
    return wrong, expected


def check_transfer_shares(run: oracle.StoredRun, document) -> list[str]:
    wrong = []
    for r in run.results:
        share = oracle.transfer_share(r)
        stated = _stated(document, r)["derived"]["transfer_percent_of_end_to_end"]
        if not _close(stated, None if share is None else 100 * share, SHARE):
            wrong.append(f"transfer share of {r.key}: {stated}%, recomputed {share}")
        end_to_end = oracle.median(r.phases["end_to_end"]) if "end_to_end" in r.phases else None
        if not _close(_stated(document, r)["derived"]["end_to_end_median_s"], end_to_end, SHARE):
            wrong.append(f"end-to-end median of {r.key}: recomputed {end_to_end}")
    return wrong


def check_peak_shares(run: oracle.StoredRun, document) -> tuple[list[str], list[str]]:
    """(disagreements, shares of the best measured rate above 100%: named, not failed, for a result
    that was not plainly valid, since only plainly valid results set the best)."""
    wrong, above = [], []
    for r in run.results:
        derived = _stated(document, r)["derived"]
        of_measured, of_sheet = oracle.peak_shares(run, r)
        rate = oracle.rate(r)[0] / 1e9 if r.valid else None
        if derived["rate"] is not None or rate is not None:
            if not _close(derived["rate"], rate, SHARE):
                wrong.append(f"rate of {r.key}: {derived['rate']}, recomputed {rate}")
        for name, share in (("percent_of_measured_peak", of_measured), ("percent_of_datasheet_peak", of_sheet)):
            if not _close(derived[name], None if share is None else 100 * share, SHARE):
                wrong.append(f"{name} of {r.key}: {derived[name]}, recomputed {share}")
        if of_measured is not None and of_measured > 1 + SHARE:
            (wrong if r.trusted else above).append(f"{r.key} ({r.verdict}) at {of_measured:.0%} of the best measured")
    return wrong, above


def break_even(expected: list[oracle.Expected], document, series: str) -> tuple[str, float | None] | None:
    """From the end-to-end speed-ups of the series' compute-bound work (float32 first) against size:
    the verdicts stated (each checked against its interval above) and the recomputed ratios."""
    rows = [e for e in expected if e.field == "end_to_end_vs_cpu_all_cores" and e.shown_on.workload == "matmul"
            and f"{e.shown_on.backend}@{e.shown_on.device}" == series and e.shown_on.size]
    for dtype in ("float32", "float64", "bfloat16", "float16"):
        of_dtype = [e for e in rows if e.shown_on.params.get("dtype") == dtype]
        if of_dtype:
            rows = of_dtype
            break
    rows.sort(key=lambda e: e.shown_on.size)
    if len(rows) < 2:
        return None
    verdicts = [_stated(document, e.shown_on)["derived"]["speedups"][e.field]["verdict"] for e in rows]
    if all(v == "faster" for v in verdicts):
        return "faster_everywhere", None
    if all(v == "slower" for v in verdicts):
        return "slower_everywhere", None
    for (a, va), (b, vb) in zip(zip(rows, verdicts), list(zip(rows, verdicts))[1:]):
        if a.figure.ratio < 1 <= b.figure.ratio:
            if va == "slower" and vb == "faster":
                return "crosses", oracle.crossing_size(a.shown_on.size, a.figure.ratio, b.shown_on.size,
                                                       b.figure.ratio)
            break
    return "unclear", None


def check_break_even(stated: str | None, found: tuple[str, float | None] | None) -> list[str]:
    if found is None:
        return [] if stated is None else [f"break-even stated ({stated!r}) where fewer than two sizes count"]
    state, size = found
    words = {"faster_everywhere": "faster than all CPU cores at every size measured",
             "slower_everywhere": "never breaks even", "unclear": "no clear break-even"}
    if state != "crosses":
        return [] if stated and words[state] in stated else [f"break-even {stated!r}, by definition {state}"]
    match = re.search(r"breaks even at n ≈ ([\d,]+)", stated or "")
    if match is None or not _close(_number(match.group(1)), size, BREAK_EVEN):
        return [f"break-even {stated!r}, recomputed n ≈ {size:,.1f}"]
    return []


def check_headline(run: oracle.StoredRun, document, expected: list[oracle.Expected]) -> list[str]:
    """Each device's entry: its comparisons are the stated speed-ups of the largest compute-bound
    size, its break-even and its transfer share as recomputed, and its text says them so."""
    wrong = []
    for device in document["headline"]["devices"]:
        series = device["series"]
        rows = [r for r in run.results if f"{r.backend}@{r.device}" == series and r.valid]
        for comparison in device["comparisons"]:
            if comparison["kind"] != "compute-bound":
                continue
            compared = [r for r in rows if r.workload == "matmul" and r.size and any(
                e.shown_on is r and e.field in ("vs_cpu_all_cores", "vs_cpu_one_core") for e in expected)]
            compared = [r for r in compared if r.params.get("dtype") == "float32"] or compared
            shown = max(compared, key=lambda r: r.size or 0.0, default=None)  # the largest size measured
            if shown is None or comparison["what"] != f"matmul {shown.params.get('dtype')} n={shown.size:,.0f}":
                wrong.append(f"{series}: the answer compares {comparison['what']}, by definition "
                             f"{shown and shown.key}")
                continue
            for name, whom in (("vs_cpu_all_cores", "all CPU cores"), ("vs_cpu_one_core", "one core")):
                e = next((e for e in expected if e.shown_on is shown and e.field == name), None)
                if e is not None:
                    wrong += check_speedup(comparison[name], e)
                    wrong += check_sentence(device["text"], comparison[name], whom, series)
                elif comparison[name] is not None:
                    wrong.append(f"{series}: {name} stated where none is defined")
        wrong += check_break_even(device["break_even"], break_even(expected, document, series))
        # a share of the transfers is the row's own fact: stated with or without an end-to-end speed-up
        moved = [r for r in rows if r.workload == "matmul" and "end_to_end" in r.phases]
        float32 = [r for r in moved if r.params.get("dtype") == "float32"] or moved
        largest = max(float32, key=lambda r: r.size or 0.0) if float32 else None
        share = oracle.transfer_share(largest) if largest else None
        stated = device["transfer_share"]
        if share is None:
            if stated is not None:
                wrong.append(f"{series}: transfer share {stated} stated, none defined")
            continue
        if stated is None or not _close(stated["share"], share, SHARE) or \
                stated["where"] != f"matmul n={largest.size:,.0f}":
            wrong.append(f"{series}: transfer share {stated}, recomputed {share} at matmul n={largest.size:,.0f}")
        said = re.search(r"[Tt]ransfers take (?:nearly all \()?(\d+(?:\.\d)?)%", device["text"])
        if share < 1 and 0.005 <= share and (said is None or abs(float(said.group(1)) - 100 * share) > SAID_PERCENT):
            wrong.append(f"{series}: the text says {said and said.group(0)!r}, recomputed {share:.2%}")
    return wrong


def check_sentence(text: str, stated: dict, whom: str, series: str) -> list[str]:
    """The answer's sentence says the figure as its --json text does: the same numbers and words."""
    if stated["contaminated"]:
        # the one convention: never a figure below 1, so 0.15 is said "6.58× slower"
        found = re.search(rf"not decided against {whom} \(([\d.,]+)× (faster|slower)", text)
        r = stated["ratio"]
        value, word = (1 / r, "slower") if r < 1 else (r, "faster")
        if found is None or found.group(2) != word or not _close(_number(found.group(1)), value, SAID):
            return [f"{series}: the answer does not say 'not decided against {whom} ({value:.3g}× {word}': {text!r}"]
        return []
    if stated["verdict"] in ("faster", "slower"):
        said = stated["text"][:-1] + ", "  # '10.0× faster [9.98–10.0' + ', 12 pairs] than …' or
        # 'at least 3.20× slower (not measurable …' + ', 8 pairs) than …'
        closed = ")" if stated["text"].startswith("at least") else "]"
        if f"{closed} than {whom}" not in text:
            return [f"{series}: the answer does not say the figure against {whom}: {text!r}"]
    else:
        said = stated["text"].split("(", 1)[1][:-1]  # '1.01× [0.87–7.08]'
    return [] if said in text else [f"{series}: the answer does not say {said!r} against {whom}: {text!r}"]


def check_cpu_sentence(run: oracle.StoredRun, document) -> list[str]:
    """The CPU side's rate, share of its best measured rate and of its datasheet/formula peak, for
    the very work the answer compares (issue 42): the all-cores matmul baseline of the preferred
    dtype (float32 first) at the largest size, its size said."""
    sentence = document["headline"]["cpu"] or ""
    all_cores, _ = oracle.cpu_baselines(run)
    baselines = [r for r in all_cores.values() if r.workload == "matmul" and oracle.rate(r)[0]]
    if not baselines:
        return []
    for dtype in ("float32", "float64", "bfloat16", "float16"):
        if any(r.params.get("dtype") == dtype for r in baselines):
            baselines = [r for r in baselines if r.params.get("dtype") == dtype]
            break
    best = max(baselines, key=lambda r: r.size or 0.0)
    if f"matmul {best.params.get('dtype')} n={best.size:,.0f} on" not in sentence:
        return [f"the CPU sentence {sentence!r} is not about matmul {best.params.get('dtype')} n={best.size:,.0f}"]
    if not best.trusted:  # a noisy rate: no share of a peak stated
        return [] if "noisy: its share of a peak not stated" in sentence else [f"{sentence!r} states a noisy share"]
    match = re.search(r"matmul (\w+) n=[\d,]+ on [^:]*: [\d.]+ GFLOP/s, (\d+)% of the best this CPU was measured "
                      r"at, (\d+)% of its (\w+) peak", sentence)
    of_measured, of_sheet = oracle.peak_shares(run, best)
    if match is None:
        return [f"the CPU sentence {sentence!r} states no matmul share"]
    wrong = []
    for said, share in ((match.group(2), of_measured), (match.group(3), of_sheet)):
        if share is None or abs(float(said) - 100 * share) > SAID_PERCENT + 1e-9:
            wrong.append(f"the CPU sentence says {said}%, recomputed {share}")
    return wrong


def check_projections(run: oracle.StoredRun, report) -> list[str]:
    wrong = []
    projected = {oracle.spec_key(p["spec"]["workload"], p["spec"]["backend"], p["spec"]["device"],
                                 p["spec"]["params"]): p for p in report["projections"]}
    for r in run.results:
        mine = oracle.project(run, r, TARGET)
        stated = projected.get(r.key)
        if (mine is None) != (stated is None):
            wrong.append(f"projection of {r.key}: stated {stated is not None}, defined {mine is not None}")
            continue
        if mine is None:
            continue
        pairs = (("measured_s", mine.measured_s), ("efficiency", mine.efficiency), ("roofline_s", mine.roofline_s),
                 ("projected_s", mine.projected_s), ("projected_speedup", mine.speedup),
                 ("launch_floor_s", oracle.LAUNCH_FLOOR_S))
        for name, value in pairs:
            if not _close(stated[name], value, PROJECTION):
                wrong.append(f"projection of {r.key}: {name} {stated[name]!r}, recomputed {value!r}")
        if stated["lower_bound"] != mine.lower_bound or (stated["target_bound"] == "launch") != mine.lower_bound:
            wrong.append(f"projection of {r.key}: lower bound {stated['lower_bound']}, recomputed {mine.lower_bound}")
        for name, value in (("source_flops", mine.source_flops), ("source_bandwidth", mine.source_bandwidth)):
            have = (stated[name] or {}).get("value")
            if (r.flops if name == "source_flops" else r.bytes_moved) and not _close(have, value, PROJECTION):
                wrong.append(f"projection of {r.key}: {name} {have!r}, recomputed {value!r}")
    return wrong


# -- the synthetic run ----------------------------------------------------------------------------

def test_every_speedup_of_the_synthetic_run_is_its_definition(synthetic):
    wrong, expected = check_all_speedups(synthetic["run"], synthetic["json"])
    assert not wrong, "\n".join(wrong)
    fields = {(e.field, e.figure.paired) for e in expected}
    # the run exercises each derivation: paired and unpaired, against all cores, one core, end to end, float32
    assert {("vs_cpu_all_cores", True), ("vs_cpu_one_core", True), ("vs_cpu_one_core", False),
            ("end_to_end_vs_cpu_all_cores", True), ("end_to_end_vs_cpu_all_cores", False),
            ("float32_vs_this_dtype", False)} <= fields


def test_the_planted_contaminations_are_found_and_decide_nothing(synthetic):
    """The oracle's own reading of the planted cases (so a broken oracle cannot pass silently)."""
    expected = oracle.expected_speedups(synthetic["run"])
    figure = {(e.field, e.shown_on.backend, e.shown_on.size, e.shown_on.threads): e for e in expected}
    order = figure[("vs_cpu_all_cores", "torch", 1500.0, None)]
    cross = figure[("vs_cpu_one_core", "torch", 1000.0, None)]
    apart = figure[("vs_cpu_one_core", "torch", 2500.0, None)]
    noisy = figure[("vs_cpu_all_cores", "numpy", 1000.0, 1)]
    few = figure[("vs_cpu_one_core", "numpy", 3000.0, 2)]
    shifted = figure[("vs_cpu_all_cores", "torch", 2500.0, None)]
    assert order.figure.order_effect and order.figure.contaminated
    assert cross.figure.cross_talk and cross.figure.contaminated
    assert apart.figure.disagreement > 1.5 and apart.figure.contaminated
    assert noisy.figure.disagreement > 1.5 and noisy.figure.contaminated is None  # its side is noisy
    assert few.figure.pairs == 5 and math.isinf(few.figure.high)
    assert shifted.figure.contaminated is False and shifted.figure.high < shifted.figure.medians_ratio
    stated = _stated(synthetic["json"], shifted.shown_on)["derived"]["speedups"]["vs_cpu_all_cores"]
    assert stated["ci_high"] == pytest.approx(shifted.figure.medians_ratio, rel=1e-12)  # widened to reach it
    # an order effect of 7%: no contamination, the interval spans both directions, and it still decides
    little = figure[("vs_cpu_all_cores", "numpy", 1500.0, 1)]
    assert math.log1p(oracle.ORDER_GAP) < little.figure.order_gap <= math.log1p(oracle.ORDER_CONTAMINATES)
    assert little.figure.order_p < oracle.ORDER_ALPHA and little.figure.contaminated is False
    said = _stated(synthetic["json"], little.shown_on)["derived"]["speedups"]["vs_cpu_all_cores"]
    assert said["verdict"] == "slower" and "depends a little on which side ran first" in said["method"]
    assert said["ci_high"] / said["ci_low"] > math.exp(little.figure.order_gap) * 0.999
    # the rounds alone say faster, the ratio of medians (1.01) a difference too small to claim: not decided
    small = figure[("vs_cpu_all_cores", "torch", float(1 << 22), None)]
    low, high = min(small.figure.low, small.figure.medians_ratio), max(small.figure.high, small.figure.medians_ratio)
    assert small.figure.contaminated is False and oracle.verdict(small.figure.ratio, low, high) == "faster"
    assert oracle.verdict(small.figure.medians_ratio, low, high) != "faster"
    assert _stated(synthetic["json"], small.shown_on)["derived"]["speedups"]["vs_cpu_all_cores"]["verdict"] == "inconclusive"
    for e in (order, cross, apart):
        stated = _stated(synthetic["json"], e.shown_on)["derived"]["speedups"][e.field]
        assert stated["verdict"] == "contaminated" and stated["text"].startswith("not decided")
        assert "contaminated" in stated["text"]
    stated = _stated(synthetic["json"], noisy.shown_on)["derived"]["speedups"]["vs_cpu_all_cores"]
    assert not stated["contaminated"]  # a noisy side's median is no reference: the rounds stand alone
    assert (stated["ci_low"], stated["ci_high"]) == pytest.approx((noisy.figure.low, noisy.figure.high), rel=1e-12)


def test_warm_up_rounds_are_left_out_of_the_paired_figure(synthetic):
    """The oracle's cut and the stated figure agree (check_all_speedups); here, that there was one to agree on."""
    expected = oracle.expected_speedups(synthetic["run"])
    warm = next(e for e in expected if e.field == "vs_cpu_all_cores" and e.shown_on.backend == "torch"
                and e.shown_on.size == 3000.0)
    assert warm.figure.pairs == 12 and warm.figure.contaminated is False  # 16 rounds, 4 left out
    stated = _stated(synthetic["json"], warm.shown_on)["derived"]["speedups"]["vs_cpu_all_cores"]
    assert stated["pairs"] == 12 and "the first 4 rounds were still warm-up" in stated["method"]
    assert stated["verdict"] == "faster"


def test_break_even_transfer_shares_and_the_headline_of_the_synthetic_run(synthetic):
    run, document = synthetic["run"], synthetic["json"]
    _, expected = check_all_speedups(run, document)
    wrong = check_transfer_shares(run, document) + check_headline(run, document, expected)
    assert not wrong, "\n".join(wrong)
    (gpu,) = document["headline"]["devices"]
    state, size = break_even(expected, document, "torch@cuda:0")
    # the GPU is slower end to end at 1000 and 1500, faster at 2500 and 3000 (synthetic_runs.py)
    assert state == "crosses" and 1500 < size < 2500
    assert gpu["break_even"].startswith("with transfers it breaks even at n ≈ ")
    assert gpu["transfer_share"]["where"] == "matmul n=3,000"


def test_shares_of_peak_of_the_synthetic_run(synthetic):
    wrong, above = check_peak_shares(synthetic["run"], synthetic["json"])
    wrong += check_cpu_sentence(synthetic["run"], synthetic["json"])
    assert not wrong, "\n".join(wrong)
    # only plainly valid results set the best measured rate, and only a plainly valid one is stated
    # against it (issue 42: a noisy result 33% faster than its configuration's best was stated at 133%)
    assert above == []
    noisy = _stated(synthetic["json"], synthetic["run"].by_key(oracle.spec_key(
        "matmul", "torch", "cuda:0", {"dtype": "float32", "n": 2000})))["derived"]
    assert noisy["percent_of_measured_peak"] is None and noisy["rate"] is not None
    capped = _stated(synthetic["json"], synthetic["run"].by_key(oracle.spec_key(
        "reduce", "torch", "cuda:0", {"dtype": "float32", "n": 1 << 26})))["derived"]
    assert capped["percent_of_datasheet_peak"] > 100  # above the datasheet: said as it is, not clipped


def test_projections_of_the_synthetic_run(synthetic):
    report = synthetic["project"]
    assert not check_projections(synthetic["run"], report), "\n".join(check_projections(synthetic["run"], report))
    floor = [p for p in report["projections"] if p["lower_bound"]]
    capped = [p for p in report["projections"] if p["efficiency_capped"]]
    measured_bw = [p for p in report["projections"] if (p["source_bandwidth"] or {}).get("provenance")
                   == "measured in this run"]
    # each branch of the formula is exercised: the launch floor, the capped efficiency, a measured bandwidth
    assert floor and capped and measured_bw
    assert {p["label"] for p in report["not_projected"]} >= {"matmul torch@cuda:0 dtype=float64 n=3000"}


def test_the_answer_says_every_ratio_one_way(synthetic):
    texts = list(_strings(synthetic["json"]["headline"])) + synthetic["answer"] + [synthetic["summary"]]
    texts += [s["text"] for e in synthetic["json"]["results"] for s in e["derived"]["speedups"].values() if s]
    assert not check_answer_convention(texts), check_answer_convention(texts)
    assert any("× slower [" in t for t in texts) and any("× faster [" in t for t in texts)


def test_the_oracle_catches_a_figure_moved_on_purpose(synthetic):
    """Each check fails on a stated figure that is off: the tests above can fail."""
    run, document = synthetic["run"], json.loads(json.dumps(synthetic["json"]))
    _, expected = check_all_speedups(run, document)
    paired = next(e for e in expected if e.figure.paired and e.figure.both_valid and not e.figure.contaminated)
    stated = _stated(document, paired.shown_on)["derived"]["speedups"][paired.field]
    for change in ({"ratio": stated["ratio"] * 1.01}, {"ci_high": stated["ci_high"] * 1.05},
                   {"verdict": "inconclusive"}, {"contaminated": "made up"},
                   {"text": stated["text"].replace(stated["text"].split("×")[0], "0.10")}):
        assert check_speedup({**stated, **change}, paired), change
    slower = next(e for e in expected if _stated(document, e.shown_on)["derived"]["speedups"][e.field]["verdict"]
                  == "slower")
    said = _stated(document, slower.shown_on)["derived"]["speedups"][slower.field]
    assert check_answer_convention([f"{said['ratio']:.2f}× slower [0.30–0.40]"])
    row = next(r for r in run.results if oracle.transfer_share(r))
    _stated(document, row)["derived"]["transfer_percent_of_end_to_end"] *= 1.02
    assert check_transfer_shares(run, document)
    (gpu,) = document["headline"]["devices"]
    gpu["break_even"] = gpu["break_even"].replace("≈ ", "≈ 1")
    assert check_headline(run, document, expected)
    projection = json.loads(json.dumps(synthetic["project"]))
    projection["projections"][0]["projected_s"] *= 1.01
    assert check_projections(run, projection)


# -- one real run --------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_real_run_states_only_figures_the_oracle_recomputes(tmp_path, monkeypatch):
    """A real quick run of matmul on numpy and PoCL (to_device/to_host/end_to_end phases): every
    figure of its --json, answer and projection, recomputed from the database with sqlite3."""
    from accelbench.backends.registry import availability

    if not availability("pyopencl").ok:
        pytest.skip("needs pyopencl with an OpenCL platform (PoCL)")
    db = tmp_path / "real.sqlite"
    monkeypatch.setenv("ACCELBENCH_DB", str(db))
    code, out = _main("run", "matmul", "--sizes", "128,192", "--dtype", "float32", "--backend", "numpy,pyopencl",
                      "--device", "cpu,opencl:0:0", "--rigor", "quick", "--json", "--no-progress", "--db", str(db))
    assert code == 0, out
    document = json.loads(out)
    run = oracle.read_run(db, document["run_id"])
    assert any("end_to_end" in r.phases for r in run.results)
    wrong, expected = check_all_speedups(run, document)
    assert expected, "the run states no speed-up"
    wrong += check_transfer_shares(run, document) + check_headline(run, document, expected)
    peak_wrong, above = check_peak_shares(run, document)
    wrong += peak_wrong + check_answer_convention(list(_strings(document["headline"])))
    code, out = _main("project", document["run_id"], "--to", TARGET, "--json", "--db", str(db))
    assert code == 0, out
    wrong += check_projections(run, json.loads(out))
    assert not wrong, "\n".join(wrong)


# -- the findings -----------------------------------------------------------------------------------

STATED_RATIO = re.compile(r"(\d+(?:\.\d+)?)× (faster|slower)[^\[\]]{0,80}?\[(\d+(?:\.\d+)?)–(\d+(?:\.\d+)?)×?\]")


def _as_said(figure: oracle.Figure) -> list[tuple[float, float, float]]:
    """The (shown ratio, low, high) a text may state for a figure: read as it is, or turned to "slower"."""
    return [(figure.ratio, figure.low, figure.high), (1 / figure.ratio, 1 / figure.high, 1 / figure.low)]


def _agrees(said: tuple[float, float, float], shown: tuple[float, float, float]) -> bool:
    # a printed figure has 2 decimals or 3 significant digits: half a unit of the last one, and 1%
    return all(abs(s - v) <= 0.01 * v + 0.006 + 0.005 * s for s, v in zip(said, shown))


def check_findings(document, expected: list[oracle.Expected]) -> list[str]:
    """Every speed-up with its interval that a finding states is one the oracle derives (issue 42: a
    precision finding said 1.1× [0.1–1.6] where the table read 2.8×)."""
    figures = [shown for e in expected for shown in _as_said(e.figure)]
    wrong = []
    for finding in document["findings"]:
        for match in STATED_RATIO.finditer(finding["text"]):
            ratio, low, high = float(match[1]), float(match[3]), float(match[4])
            if not any(_agrees((ratio, low, high), shown) for shown in figures):
                wrong.append(f"{finding['kind']}: {match[0]!r} is no speed-up the oracle derives")
    return wrong


def test_every_ratio_a_finding_states_is_the_oracles(synthetic):
    document = synthetic["json"]
    _, expected = check_all_speedups(synthetic["run"], document)
    stated = [m for f in document["findings"] for m in STATED_RATIO.finditer(f["text"])]
    assert len(stated) >= 3, [f["text"] for f in document["findings"]]  # the findings state ratios to check
    assert {f["kind"] for f in document["findings"] if STATED_RATIO.search(f["text"])} >= {"precision"}
    assert not check_findings(document, expected), check_findings(document, expected)
    moved = json.loads(json.dumps(document))
    finding = next(f for f in moved["findings"] if STATED_RATIO.search(f["text"]))
    match = STATED_RATIO.search(finding["text"])
    finding["text"] = finding["text"].replace(match[0], match[0].replace(match[1], f"{float(match[1]) * 1.1:.2f}", 1))
    assert check_findings(moved, expected)  # a ratio moved by 10% is found
