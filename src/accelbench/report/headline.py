"""The answer first: for each measured device, how much faster or slower than the CPU it is, and how sure.

Built from the rows the tables show (report/analysis.py), one entry per backend@device other than
numpy on the CPU (a CPU implementation that is the all-cores baseline of some work, being the
fastest measured there, is read against one core for that work): compute-bound work and memory-bound
work (as each workload declares its role, workloads/base.py; of several of one role, the first in
the registry's order: matmul; STREAM triad, else reduce or elementwise; then third parties'), each at
the largest size measured, against all CPU cores and one core with its 95% interval and the pairs behind it;
where it breaks even once transfers count, and their share; how many of its results are valid.
Work of other kinds is named when nothing else was run. Devices that could not be measured come
right after; caveats are grouped after those.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from accelbench.report import ratio_text
from accelbench.report.analysis import Row
from accelbench.report.cpu_text import cpu_sentence
from accelbench.report.data import series_label, size_of, transfer_share
from accelbench.report.reason_kinds import reason_kind
from accelbench.results import Measurement
from accelbench.runner import answer_scope
from accelbench.runner.load_bias import short_reason
from accelbench.runner import cpu_baseline as baselines
from accelbench.runner.speedups import SpeedupCI
from accelbench.vocabulary import Role, is_cpu_baseline

DTYPE_PREFERENCE = answer_scope.DTYPE_PREFERENCE
VERDICT_ORDER = ("valid", "noisy", "unverified", "invalid")
HEADLINE_LINES_SHOWN = 8  # sentences in repr()


@dataclass(frozen=True)
class WorkComparison:
    """One kind of work on one backend@device against the CPU, at one size."""

    kind: str                       # "compute-bound", "memory-bound", or a workload's name
    what: str                       # "matmul float32 n=1,000"
    vs_all_cores: SpeedupCI | None
    vs_one_core: SpeedupCI | None
    problem: tuple = ()             # the work compared (cpu_baseline.baseline_key): the CPU side states its baseline

    def to_dict(self) -> dict[str, Any]:
        from accelbench.report.derived import speedup_dict

        return {"kind": self.kind, "what": self.what, "vs_cpu_all_cores": speedup_dict(self.vs_all_cores),
                "vs_cpu_one_core": speedup_dict(self.vs_one_core)}


@dataclass(frozen=True)
class DeviceVerdict:
    """The headline for one backend@device: its comparisons, break-even, transfers, confidence."""

    series: str                      # "pyopencl@opencl:0:0"
    device: str
    description: str                 # what the device is, in words
    comparisons: tuple[WorkComparison, ...]
    break_even: str | None           # "breaks even at n ≈ 700 with transfers", "slower at every size …"
    transfer_share: tuple[str, float] | None  # (where, share of end-to-end time spent moving data)
    verdicts: Mapping[str, int] = field(default_factory=dict)
    why_not_compared: str = ""       # with no comparison: why none could be made

    @property
    def confidence(self) -> str:
        counts = ", ".join(f"{self.verdicts[v]} {v}" for v in VERDICT_ORDER if self.verdicts.get(v))
        noisy = self.verdicts.get("noisy", 0) + self.verdicts.get("invalid", 0)
        level = "low" if noisy * 2 >= sum(self.verdicts.values()) else ("medium" if noisy else "high")
        return f"confidence {level} ({counts})"

    def sentences(self) -> list[str]:
        parts = [_comparison_text(c) for c in self.comparisons]
        nothing = "no speed-up against the CPU could be measured" + (
            f": {self.why_not_compared}" if self.why_not_compared else "")
        first = f"{self.series} ({self.description}): " + ("; ".join(parts) if parts else nothing) + "."
        second = [s for s in (self.break_even, _share_text(self.transfer_share)) if s]
        tail = (" ".join(s[0].upper() + s[1:] + "." for s in second) + " " if second else "")
        return [first, f"{tail}{self.confidence[0].upper()}{self.confidence[1:]}."]

    def to_dict(self) -> dict[str, Any]:
        return {"series": self.series, "device": self.device, "description": self.description,
                "comparisons": [c.to_dict() for c in self.comparisons], "break_even": self.break_even,
                "transfer_share": None if self.transfer_share is None else
                {"where": self.transfer_share[0], "share": self.transfer_share[1]},
                "verdicts": dict(self.verdicts), "confidence": self.confidence, "text": " ".join(self.sentences())}

    def __repr__(self) -> str:
        return f"DeviceVerdict({' '.join(self.sentences())})"


@dataclass(frozen=True)
class Headline:
    devices: tuple[DeviceVerdict, ...]
    unreached: tuple[str, ...] = ()
    caveats: tuple[str, ...] = ()
    cpu: str | None = None   # what the CPU side is and what it reached (report/cpu_text.py)
    results: int | None = None  # how many results the answer was made from (0: nothing was measured)

    @property
    def no_device_text(self) -> str:
        """The sentence in place of the devices: a run that measured nothing has no CPU baseline either."""
        if self.results == 0:
            return "Nothing was measured in this run: there is no speed-up to state."
        return "No device other than the CPU baseline was measured: there is no speed-up to state."

    def lines(self) -> list[str]:
        """Plain sentences, device by device, the CPU side, then unreached devices, then caveats."""
        out = [" ".join(d.sentences()) for d in self.devices]
        if not self.devices:
            out.append(self.no_device_text)
        if self.cpu:
            out.append(self.cpu)
        out += list(self.unreached)  # each says "… found, not measured: why"
        out += list(self.caveats)
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"devices": [d.to_dict() for d in self.devices], "unreached": list(self.unreached),
                "caveats": list(self.caveats), "cpu": self.cpu}

    def __repr__(self) -> str:
        """The answer as sentences, a few lines (`.to_dict()` has every figure)."""
        from accelbench.report.result_text import clip

        lines = self.lines()
        shown = [f"  {clip(line, 400)}" for line in lines[:HEADLINE_LINES_SHOWN]]
        more = [f"  … {len(lines) - HEADLINE_LINES_SHOWN} more lines: .lines()"] if len(lines) > HEADLINE_LINES_SHOWN else []
        return "\n".join(["Headline (the answer):", *shown, *more])

    def _repr_html_(self) -> str:
        from html import escape

        return "<ul>" + "".join(f"<li>{escape(line)}</li>" for line in self.lines()) + "</ul>"


def headline(rows: list[Row], descriptions: Mapping[str, str] | None = None, *,
             unreached: Iterable[str] = (), caveats: Iterable[str] = ()) -> Headline:
    """`descriptions`: device id -> what it is in words (device_description); rows from analyse()."""
    descriptions = descriptions or {}
    by_series: dict[str, list[Row]] = defaultdict(list)
    most_threads: dict[str, int] = {}
    for row in rows:
        if row.spec.device == "cpu":
            most_threads[row.spec.backend] = max(most_threads.get(row.spec.backend, 0), _threads(row))
    for row in rows:
        if row.baseline_role == "cpu_one_thread" or is_cpu_baseline(row.spec.backend, row.spec.device):
            continue
        # a CPU implementation that is the all-cores baseline of some work (deep learning's framework on
        # the CPU; torch or jax where it beat numpy) stays: there its answer is against one core
        if row.spec.device == "cpu" and _threads(row) < most_threads[row.spec.backend]:
            continue  # another framework on the CPU: on all its threads, as the baseline is
        by_series[_series(row)].append(row)
    verdicts = []
    for series, items in sorted(by_series.items(), key=lambda kv: (kv[1][0].spec.device == "cpu", kv[0])):
        device = items[0].spec.device
        moved = [r for r in items if "end_to_end" in r.measurement.phases_s and r.measurement.valid]
        e2e = _largest(_preferred(_of_role(moved, "compute-bound")) or moved)
        verdicts.append(DeviceVerdict(
            series=series, device=device, description=descriptions.get(device, device),
            comparisons=tuple(_comparisons(items)), break_even=_break_even(items),
            transfer_share=_share(e2e), verdicts=Counter(r.measurement.verdict for r in items),
            why_not_compared=_why_not_compared(items, rows)))
    compared = {c.kind: c.problem for d in verdicts for c in d.comparisons if c.vs_all_cores is not None}
    compared_one = {c.kind: c.problem for d in verdicts for c in d.comparisons if c.vs_one_core is not None}
    # with no device compared, the CPU's own figures are the answer: those answer_scope would state
    anything = bool(compared or compared_one)
    return Headline(tuple(verdicts), tuple(unreached), tuple(caveats),
                    cpu_sentence(rows, compared if anything else None, compared_one if anything else None),
                    results=len(rows))


def device_description(record: Mapping[str, Any]) -> str:
    """What a device is, from its inventory record (Device.to_dict() or the stored machine's copy);
    an OpenCL driver that runs on the host CPU is named as such: it is not an accelerator."""
    props = record.get("properties") or {}
    name = str(record.get("name") or record.get("id") or "?")
    if record.get("id") == "cpu":
        return f"the CPU, {name}"
    if str(props.get("device_type", "")).upper() == "CPU":
        platform = props.get("platform_name") or "an OpenCL platform"
        return f"{platform} running on this same CPU, not an accelerator"
    return name


def caveat_lines(rows: list[Row], busy_notice: str | None = None) -> list[str]:
    """What qualifies the answer, grouped: the machine was busy; how many results are not plainly valid, and why."""
    found = [busy_notice[0].upper() + busy_notice[1:] + "."] if busy_notice else []
    found += [text for text in [collapsed_text(rows)] if text]
    statuses = Counter(r.measurement.verdict for r in rows)
    doubtful = sum(n for v, n in statuses.items() if v != "valid")
    if doubtful:
        why = Counter(reason_kind(r.measurement.verdict_reasons[0]) for r in rows
                      if r.measurement.verdict != "valid" and r.measurement.verdict_reasons)
        counts = ", ".join(f"{statuses[v]} {v}" for v in VERDICT_ORDER[1:] if statuses.get(v))
        reasons = "; ".join(f"{kind} ({n})" for kind, n in why.most_common(4))
        found.append(f"{doubtful} of {len(rows)} results are not plainly valid ({counts})"
                     + (f": {reasons}" if reasons else "") + ". Each result's verdict names why (`accelbench show`).")
    return found


def collapsed_text(rows: list[Row]) -> str:
    """Where the CPU's all-cores results ran slower than one thread (runner/speedups.py
    collapsed_baselines): no denominator; said once, with the worst case."""
    from accelbench.units import format_seconds

    from accelbench.timing import stats

    found = baselines.collapsed_baselines([r.measurement for r in rows])
    if not found:
        return ""
    worst, one, _ = baselines.worst_collapse(found)
    size = size_of(worst.spec)
    what = " ".join(str(p) for p in (worst.spec.workload, worst.spec.param("kernel"), worst.spec.param("dtype"),
                                     f"n={size:,.0f}" if size is not None else None) if p)
    many = f"{len(found)} cases, worst " if len(found) > 1 else ""
    return (f"The CPU ran slower on all cores than on one thread ({many}{what}: {worst.spec.backend}, "
            f"{worst.threads} threads {format_seconds(stats.median(worst.samples_s))} against one "
            f"{format_seconds(stats.median(one.samples_s))}): {baselines.collapse_cause(worst)}. No baseline there.")


def _threads(row: Row) -> int:
    threads = row.spec.param("threads")
    return int(threads) if isinstance(threads, int) else 0


def _series(row: Row) -> str:
    label = series_label(row.spec)
    return label.split(" (")[0] if row.spec.device != "cpu" else label


def _rows_of(chosen: Iterable[Measurement], rows: Iterable[Row]) -> list[Row]:
    """The rows of `chosen` measurements, in their order."""
    by_id = {id(r.measurement): r for r in rows}
    return [by_id[id(m)] for m in chosen if id(m) in by_id]


def _largest(rows: list[Row]) -> Row | None:
    """The row of the largest size (runner/answer_scope.py); a workload without a size gives its first row."""
    found = _rows_of(filter(None, [answer_scope.largest(r.measurement for r in rows)]), rows)
    return found[0] if found else None


def _preferred(rows: list[Row]) -> list[Row]:
    """The rows of the preferred dtype (float32 first: what accelerators are bought for)."""
    return _rows_of(answer_scope.preferred([r.measurement for r in rows]), rows)


def _comparisons(items: list[Row]) -> list[WorkComparison]:
    """What the answer states for one series (runner/answer_scope.py `stated`: the paired rounds read it too)."""
    compared = [r for r in items if r.measurement.valid and (r.speedup_all or r.speedup_one)]
    by_id = {id(r.measurement): r for r in compared}
    framework = {r.spec.workload for r in compared if baselines.framework_is_cpu_baseline(r.spec.workload)}
    return [_comparison(kind, by_id[id(m)]) for kind, m in answer_scope.stated([r.measurement for r in compared],
                                                                                framework)]


def _why_not_compared(items: list[Row], rows: list[Row]) -> str:
    """Why a device has no comparison: said, so that a run of the device alone (`--device cuda:0`)
    is not read as a device the CPU cannot be compared with."""
    if not any(r.spec.device == "cpu" for r in rows):
        return f"this run measured nothing on the CPU (measure both: `--device cpu,{items[0].spec.device}`)"
    if not any(r.measurement.valid for r in items):
        return "none of its results counts (each is invalid: the verdicts below say why)"
    return "the CPU ran none of the same work (workload, dtype and size) in this run"


def _of_role(rows: list[Row], role: Role) -> list[Row]:
    """The rows of the first workload among `rows` of `role` (runner/answer_scope.py `of_role`)."""
    return _rows_of(answer_scope.of_role([r.measurement for r in rows], role), rows)


def _comparison(kind: str, row: Row) -> WorkComparison:
    spec = row.spec
    size = size_of(spec)
    kernel = spec.param("kernel")
    what = " ".join(str(p) for p in (spec.workload, kernel, spec.param("dtype")) if p)
    if size is not None:
        what += f" n={size:,.0f}"
    return WorkComparison(kind, what, row.speedup_all, row.speedup_one, baselines.baseline_key(row.measurement))


def ratio_words(ratio: SpeedupCI, whom: str = "") -> str:
    """'3.10× faster [2.90–3.30, 8 pairs] than WHOM', '4.00× slower [3.80–4.20, 8 pairs] than WHOM',
    'no clear difference from WHOM (0.98× [0.90–1.07], 8 pairs)': report/ratio_text.py's convention."""
    basis = f"{ratio.pairs} pairs" if ratio.paired else "unpaired"
    if ratio.contaminated or ratio.withheld:
        why = ratio.contaminated or short_reason(ratio.moved_sides)
        return f"not decided{f' against {whom}' if whom else ''} ({ratio_text.signed(ratio.ratio)}, {basis}: {why})"
    text = ratio_text.phrase(ratio)
    if ratio_text.oriented(ratio).directed:
        return f"{text[:-1]}, {basis}{text[-1]}" + (f" than {whom}" if whom else "")
    label, _, rest = text.partition(" (")
    linked = {"same speed": "as", "no clear difference": "from"}.get(label, "against")
    return f"{label}{f' {linked} {whom}' if whom else ''} ({rest[:-1]}, {basis})"


def _comparison_text(c: WorkComparison) -> str:
    against = []
    if c.vs_all_cores:
        against.append(ratio_words(c.vs_all_cores, "all CPU cores"))
    if c.vs_one_core:
        against.append(ratio_words(c.vs_one_core, "one core"))
    return f"{c.kind} ({c.what}) " + ", ".join(against)


def _break_even(items: list[Row]) -> str | None:
    """Where the device starts to win once transfers count (compute-bound work, the preferred dtype)."""
    from accelbench.report.crossover import Curve, classify, find_crossing

    kept = sorted((r for r in _preferred(_of_role(items, "compute-bound"))
                   if r.measurement.valid and r.speedup_end_to_end is not None and size_of(r.spec)),
                  key=lambda r: size_of(r.spec) or 0.0)
    if len(kept) < 2:
        return None
    ratios = tuple(r.speedup_end_to_end for r in kept if r.speedup_end_to_end is not None)
    curve = Curve(tuple(size_of(r.spec) or 0.0 for r in kept), ratios)
    state, sizes = classify(curve), f"n = {curve.sizes[0]:,.0f}–{curve.sizes[-1]:,.0f}"
    if state == "crosses":
        crossing = find_crossing(curve)
        return None if crossing is None else f"with transfers it breaks even at n ≈ {crossing.size:,.0f}"
    if state == "slower_everywhere":
        return f"with transfers it never breaks even: slower than all CPU cores at every size measured ({sizes})"
    if state == "faster_everywhere":
        return f"with transfers it is faster than all CPU cores at every size measured ({sizes})"
    return f"with transfers, no clear break-even ({sizes}: the intervals include 1)"


def _share(row: Row | None) -> tuple[str, float] | None:
    share = transfer_share(row) if row is not None else None
    if row is None or share is None:
        return None
    size = size_of(row.spec)
    return (f"{row.spec.workload} n={size:,.0f}" if size is not None else row.spec.workload), share


def _share_text(share: tuple[str, float] | None) -> str | None:
    if share is None:
        return None
    where, value = share
    if value >= 1.0:  # capped: the transfers, timed apart, took as long as the whole call
        return (f"transfers take all of the end-to-end time ({where}): timed on their own they last as long "
                "as the whole call, so the compute is too short to tell apart")
    amount = ("under 1%" if value < 0.005 else f"nearly all ({value:.1%})" if value >= 0.995
              else f"{value:.0%}")  # 99.6% is not "100%": the compute still took some time
    return f"transfers take {amount} of the end-to-end time ({where})"


def headline_for_run(rows: list[Row], devices: Mapping[str, Any], machine: Mapping[str, Any],
                     rigor: str | None = None) -> Headline:
    """The headline of one run: `devices` (id -> Device or its dict), `machine` as stored with the run
    (its "unreached_devices" name what no backend reached), `rigor` the run's (advice fits it)."""
    from accelbench.runner.reach import UnreachedDevices
    from accelbench.timing.contention import run_notice

    descriptions = {key: device_description(d.to_dict() if hasattr(d, "to_dict") else d) for key, d in devices.items()}
    recorded = machine.get("unreached_devices")
    unreached = [UnreachedDevices.from_dict(g).text for g in recorded or [] if isinstance(g, dict)]
    return headline(rows, descriptions, unreached=unreached,
                    caveats=caveat_lines(rows, run_notice((r.measurement for r in rows), rigor)))


def render_headline(answer: Headline, console: Any) -> None:
    """The headline in a terminal: a bullet per device, wrapped under its own indent at any width."""
    from rich.table import Table

    from accelbench.terminal import literal

    console.print("[bold]The answer[/] (each device against this machine's CPU; details below):")
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=1, no_wrap=True)
    grid.add_column(overflow="fold")
    for device in answer.devices:
        grid.add_row("•", literal(" ".join(device.sentences())))
    if not answer.devices:
        grid.add_row("•", answer.no_device_text)
    if answer.cpu:
        grid.add_row("•", literal(answer.cpu))
    for text in answer.unreached:
        grid.add_row("[yellow]![/]", literal(text))
    for text in answer.caveats:
        grid.add_row("[yellow]![/]", literal(text))
    console.print(grid)


def headline_html(answer: Headline, run_id: str, after_devices: str = "") -> str:
    """The report's opening: a sentence pair per device, then `after_devices` (the devices not
    measured), then the caveats."""
    from html import escape

    items = "".join(f'<li><b>{escape(d.series)}</b> {escape(" ".join(d.sentences())[len(d.series) + 1:])}</li>'
                    for d in answer.devices)
    if not answer.devices:
        items = f"<li>{escape(answer.no_device_text)}</li>"
    caveat_items = "".join(f'<li class="warning">{escape(text)}</li>' for text in answer.caveats)
    return (f'<div class="headline" id="headline-{escape(run_id)}"><h3>The answer</h3>'
            f'<ul class="headline-devices">{items}</ul>{after_devices}'
            + (f'<ul class="findings caveats">{caveat_items}</ul>' if caveat_items else "") + "</div>")
