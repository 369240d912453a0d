"""Place a run among the seeds' published figures and the datasheet peaks of known accelerators.

The published figures (data/reference_results.json) come from other machines and software stacks,
each row with its seed file, section, the exact figure as printed and its conditions; a result is
put beside them only where its workload and parameters match the figure's definition. Datasheet
peaks come from devices/datasheets.py: the run's best matmul FLOP/s and stream GB/s are shown as a
share of each device's peak (a ceiling, not something any code reaches).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from accelbench.report.compare.ceilings import BestRate, row_peak, run_best_rates
from accelbench.report.compare.compare import spec_label
from accelbench.report.data import RunData
from accelbench.devices import datasheets
from accelbench.results import Measurement
from accelbench.timing import stats

SOURCE_FIELDS = ("seed", "section", "figure", "reading", "conditions")


# the published tutorials the reference figures come from, named in words
TUTORIALS = {"000": "the R tutorial on GPU computing on an HPC node",
             "003": "the deep-learning GPU essentials tutorial",
             "004": "the PlaidML tutorial on a MacBook (CPU vs GPU)"}


@dataclass(frozen=True)
class ReferenceRow:
    device: str
    kind: str
    software: str
    value_s: float
    source: dict[str, str]
    datasheet_key: str | None = None

    def citation(self) -> str:
        """The tutorial, section and figure as printed, each followed by its English where it has none."""
        from accelbench.report.compare.glosses import gloss

        tutorial = TUTORIALS.get(str(self.source.get("seed", ""))[:3], "a GPU tutorial")  # "004_….txt"
        section, figure = self.source["section"], self.source["figure"]
        section_en, figure_en = gloss(section), gloss(figure)
        return (f"{tutorial}, {section}" + (f" [in English: {section_en}]" if section_en else "")
                + f": “{figure}”" + (f" [in English: “{figure_en}”]" if figure_en else ""))


@dataclass(frozen=True)
class Benchmark:
    key: str
    title: str
    unit: str
    maps_from: dict[str, Any]
    rows: tuple[ReferenceRow, ...]


def _row(raw: dict[str, Any], where: str) -> ReferenceRow:
    source = raw.get("source") or {}
    missing = [f for f in SOURCE_FIELDS if not str(source.get(f, "")).strip()]
    if missing:
        raise ValueError(f"reference row {where}: source lacks {', '.join(missing)}")
    return ReferenceRow(device=raw["device"], kind=raw["kind"], software=raw["software"],
                        value_s=float(raw["value_s"]), source=dict(source),
                        datasheet_key=raw.get("datasheet_key"))


@lru_cache(maxsize=None)
def benchmarks() -> tuple[Benchmark, ...]:
    """The published figures, checked on load: a row without its full source is refused."""
    text = resources.files("accelbench").joinpath("data", "reference_results.json").read_text(encoding="utf-8")
    found = []
    for raw in json.loads(text)["benchmarks"]:
        rows = tuple(_row(r, f"{raw['key']}[{i}]") for i, r in enumerate(raw["rows"]))
        found.append(Benchmark(raw["key"], raw["title"], raw["unit"], dict(raw["maps_from"]), rows))
    return tuple(found)


# -- a user's result in the figure's terms ---------------------------------------------------------

@dataclass(frozen=True)
class UserFigure:
    measurement: Measurement
    device_name: str
    value_s: float
    how: str  # how the figure was made from the result
    differences: tuple[str, ...] = ()  # what differs from the published set-up, beyond the time


# What the tutorials' set-ups had that accelbench's does not, per published benchmark
KNOWN_DIFFERENCES = {
    "vgg19-inference-batch8": (
        "weights: random here (built in code, never downloaded), ImageNet's in the tutorial; a forward "
        "pass takes the same time with any weights",
        "images: random values here, 8 CIFAR-10 images upsampled 7× to 224² in the tutorial"),
    "mnist-mlp-epoch": (
        "weights: both start from random weights; accuracy after one epoch depends on the data size",),
}


def differences(benchmark: Benchmark, m: Measurement, device_name: str) -> tuple[str, ...]:
    """The differences that matter between a result and the published rows it is placed among:
    hardware, software, data size, weights."""
    theirs_hw = "; ".join(dict.fromkeys(r.device for r in benchmark.rows))
    theirs_sw = "; ".join(dict.fromkeys(r.software for r in benchmark.rows))
    found = [f"hardware: {device_name} ({m.spec.device}) here; published: {theirs_hw}",
             f"software: accelbench's {m.spec.backend} backend here; published: {theirs_sw}"]
    train = m.extra.get("train_digits")
    if isinstance(train, (int, float)) and not isinstance(train, bool):
        found.append(f"data: {int(train):,} training digits here (the step time is scaled to the epoch's "
                     f"samples); the tutorial trained on 48,000")
    found += KNOWN_DIFFERENCES.get(benchmark.key, ())
    return tuple(found)


def _param(m: Measurement, names: str) -> tuple[bool, Any]:
    """A parameter under any of its "a|b" names: (present, value)."""
    params = dict(m.spec.params)
    for name in names.split("|"):
        if name in params:
            return True, params[name]
    return False, None


def _samples_per_call(m: Measurement, sources: list[str]) -> tuple[float, str] | None:
    for source in sources:
        kind, _, name = source.partition(":")
        value = m.extra.get(name) if kind == "extra" else dict(m.spec.params).get(name)
        if isinstance(value, (int, float)) and value > 0:
            return float(value), f"{name}={value:g}"
    return None


def user_figure(benchmark: Benchmark, m: Measurement, device_name: str) -> UserFigure | str | None:
    """The result in the benchmark's unit; None when it measures something else; a reason text
    when it is the right workload but cannot be put in the figure's terms."""
    rule = benchmark.maps_from
    if m.spec.workload != rule["workload"]:
        return None
    for names, wanted in rule.get("match_if_present", {}).items():
        present, value = _param(m, names)
        if present and str(value) != str(wanted):
            return None
    if not m.valid:
        return f"{spec_label(m.spec)}: {m.verdict}, not placed"
    median_s = stats.median(m.samples_s)
    target = rule.get("scale_to_samples")
    if not target:
        return UserFigure(m, device_name, median_s, "median time per call", differences(benchmark, m, device_name))
    per_call = _samples_per_call(m, rule.get("samples_per_call") or [])
    if per_call is None:
        return (f"{spec_label(m.spec)}: no samples-per-call figure (looked for "
                f"{', '.join(rule.get('samples_per_call') or [])}), cannot scale to {target:,} samples")
    samples, named = per_call
    return UserFigure(m, device_name, median_s / samples * target,
                      f"median {median_s:.4g} s per call ({named}) × {target:,} / {samples:g}",
                      differences(benchmark, m, device_name))


@dataclass(frozen=True)
class Placement:
    benchmark: Benchmark
    user: tuple[UserFigure, ...]
    not_placed: tuple[str, ...]

    def ordered(self) -> list[tuple[float, str, ReferenceRow | UserFigure]]:
        """Reference rows and the user's figures together, fastest first."""
        items: list[tuple[float, str, ReferenceRow | UserFigure]] = [
            (r.value_s, "seed", r) for r in self.benchmark.rows]
        items += [(u.value_s, "yours", u) for u in self.user]
        return sorted(items, key=lambda item: item[0])


def place_run(run: RunData) -> list[Placement]:
    """Every published benchmark, with the run's matching results placed among its rows."""
    placements = []
    for benchmark in benchmarks():
        users, reasons = [], []
        for m in run.measurements:
            found = user_figure(benchmark, m, run.device_name(m.spec.device))
            if isinstance(found, UserFigure):
                users.append(found)
            elif isinstance(found, str):
                reasons.append(found)
        placements.append(Placement(benchmark, tuple(users), tuple(reasons)))
    return placements


# -- datasheet peaks -----------------------------------------------------------------------------

@dataclass(frozen=True)
class PeakShare:
    row: datasheets.DatasheetRow
    metric: str
    peak: float   # per device, FLOP/s or B/s
    share: float  # the run's rate / peak


def datasheet_shares(rate: BestRate) -> list[PeakShare]:
    """The rate as a share of every datasheet device that gives a figure for its metric."""
    shares = []
    for row in datasheets.rows():
        found = row_peak(row, rate.metrics)
        if found is not None:
            metric, peak = found
            shares.append(PeakShare(row, metric, peak, rate.rate / peak))
    return shares


def reference_report(run: RunData) -> dict[str, Any]:
    """Everything `accelbench compare --reference` shows, as plain data (also its --json)."""
    placements = place_run(run)
    rates = run_best_rates(run)
    return {
        "run_id": run.run_id, "source": run.source, "hostname": run.hostname,
        "benchmarks": [{
            "key": p.benchmark.key, "title": p.benchmark.title, "unit": p.benchmark.unit,
            "rows": [{"device": r.device, "kind": r.kind, "software": r.software, "value_s": r.value_s,
                      "source": r.source} for r in p.benchmark.rows],
            "yours": [{"spec": u.measurement.spec.to_dict(), "label": spec_label(u.measurement.spec),
                       "device_name": u.device_name, "value_s": u.value_s, "how": u.how,
                       "differences": list(u.differences)} for u in p.user],
            "not_placed": list(p.not_placed)} for p in placements],
        "datasheet_shares": [{
            "what": r.what, "device": r.device, "device_name": r.device_name, "rate": r.rate, "unit": r.unit,
            "spec": r.spec.to_dict(),
            "shares": [{"datasheet": s.row.key, "name": s.row.name, "metric": s.metric, "peak": s.peak,
                        "share": s.share, "source": s.row.source} for s in datasheet_shares(r)]}
            for r in rates],
    }
