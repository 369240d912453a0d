"""The fleet view: per node type, every node's headline figures beside the type's median, the
slow nodes flagged by the robust rule of outliers.py, and the nodes that failed or were not measured.

A node type is a set of Slurm node features (what `submit --each-node` recorded). A headline
figure is one spec's rate (FLOP/s or B/s from the median compute time) per workload, backend,
device and non-size parameters, at the largest size measured on at least two nodes of the type.
Only `valid` results take part (`noisy` ones too when asked: a shared test machine). Earlier
sweeps of the same node type in the database widen what the spread is learnt from.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from accelbench.cluster.outliers import Judgement, Spread, deviations, judge, median
from accelbench.report.analysis import rate_of
from accelbench.report.data import SIZE_PARAMS, size_of
from accelbench.results import Measurement, Spec
from accelbench.timing import stats

MAX_HISTORY_SWEEPS = 10        # the latest earlier sweeps: a fleet from a year ago says little about today
NO_FEATURES = "(no features)"
STATUSES = ("measured", "failed", "pending", "unmeasured")


@dataclass(frozen=True)
class NodeEntry:
    """One node of the sweep: how its job went, and its runs in the database."""

    node: str
    node_type: str
    status: str                          # measured | failed | pending | unmeasured
    detail: str = ""                     # Slurm's state or reason, for failed / unmeasured nodes
    run_ids: tuple[str, ...] = ()
    log_tail: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeFigure:
    value: float          # rate, median over the node's runs
    unit: str             # FLOP/s | B/s
    spread: float         # the node's own 95% interval of the median, relative half-width
    verdict: str          # the worst verdict among the results used


@dataclass
class HeadlineView:
    key: str              # spec key
    label: str
    unit: str
    median: float | None
    spread: Spread
    judgements: list[Judgement]
    figures: dict[str, NodeFigure]


@dataclass
class TypeView:
    node_type: str
    nodes: list[NodeEntry]
    headlines: list[HeadlineView] = field(default_factory=list)
    unjudged: dict[str, str] = field(default_factory=dict)   # measured node -> why it has no figure

    def count(self, status: str) -> int:
        return sum(1 for n in self.nodes if n.status == status)


@dataclass
class FleetView:
    submission: str
    verdicts: tuple[str, ...]
    types: list[TypeView]

    def nodes(self, status: str) -> list[NodeEntry]:
        return [n for t in self.types for n in t.nodes if n.status == status]

    def outliers(self) -> list[tuple[TypeView, HeadlineView, Judgement]]:
        return [(t, h, j) for t in self.types for h in t.headlines for j in h.judgements
                if j.verdict == "outlier"]

    def unjudged(self) -> dict[str, str]:
        """Measured nodes with no figure compared, and why (e.g. every result noisy)."""
        return {node: why for t in self.types for node, why in t.unjudged.items()}

    def outlier_nodes(self) -> list[str]:
        return list(dict.fromkeys(j.node for _, _, j in self.outliers()))

    def to_dict(self) -> dict[str, Any]:
        return {"submission": self.submission, "verdicts_admitted": list(self.verdicts),
                "outliers": self.outlier_nodes(),
                "failed": [{"node": n.node, "state": n.detail, "log_tail": list(n.log_tail)} for n in self.nodes("failed")],
                "not_measured": [{"node": n.node, "reason": n.detail} for n in self.nodes("unmeasured")],
                "pending": [n.node for n in self.nodes("pending")],
                "types": [_type_dict(t) for t in self.types]}


def _type_dict(view: TypeView) -> dict[str, Any]:
    return {"node_type": view.node_type,
            "nodes": [{"node": n.node, "status": n.status, "detail": n.detail, "runs": list(n.run_ids)}
                      for n in view.nodes],
            "unjudged": dict(view.unjudged),
            "headlines": [{
                "spec_key": h.key, "label": h.label, "unit": h.unit, "type_median": h.median,
                "spread": {"relative_sigma": h.spread.relative, "estimate_log": h.spread.estimate,
                           "points": h.spread.points, "history_points": h.spread.history_points,
                           "source": h.spread.source, "outlier_below_ratio": h.spread.threshold},
                "nodes": [{"node": j.node, "value": j.value, "ratio_to_median": j.ratio, "z": j.z,
                           "verdict": j.verdict, "node_spread": h.figures[j.node].spread,
                           "result_verdict": h.figures[j.node].verdict} for j in h.judgements]}
                for h in view.headlines]}


def _group_key(spec: Spec) -> tuple:
    """Specs that differ only in size are one headline's candidates."""
    return (spec.workload, spec.backend, spec.device,
            tuple((k, v) for k, v in spec.params if k not in SIZE_PARAMS))


def counted(m: Measurement, verdicts: tuple[str, ...]) -> bool:
    return m.valid and m.verdict in verdicts and bool(m.samples_s)


@dataclass
class _Rates:
    spec: Spec
    unit: str
    rates: list[float] = field(default_factory=list)        # one per run
    halfwidths: list[float] = field(default_factory=list)   # relative 95% CI half-width of each median
    verdicts: list[str] = field(default_factory=list)


def _rates(store, run_ids, verdicts) -> dict[str, _Rates]:
    """spec key -> the node's rates of that spec over its runs (admitted verdicts only)."""
    found: dict[str, _Rates] = {}
    for run_id in run_ids:
        for m in store.results(run_id):
            if not counted(m, verdicts):
                continue
            median_s = stats.median(m.samples_s)
            rate, unit = rate_of(m, median_s)
            if rate is None:
                continue
            low, high = stats.median_ci(m.samples_s)
            entry = found.setdefault(m.spec.key, _Rates(m.spec, unit))
            entry.rates.append(rate)
            entry.halfwidths.append(stats.relative_halfwidth(median_s, low, high))
            entry.verdicts.append(m.verdict)
    return found


def _headlines(per_node: dict[str, dict[str, _Rates]]) -> list[str]:
    """The spec keys to compare: per group, the largest size at least two nodes measured."""
    nodes_of: dict[str, set[str]] = defaultdict(set)
    spec_of: dict[str, Spec] = {}
    for node, rates in per_node.items():
        for key, entry in rates.items():
            nodes_of[key].add(node)
            spec_of[key] = entry.spec
    best: dict[tuple, str] = {}
    for key, nodes in nodes_of.items():
        if len(nodes) < 2:
            continue
        group = _group_key(spec_of[key])
        size = size_of(spec_of[key]) or 0.0
        if group not in best or size > (size_of(spec_of[best[group]]) or 0.0):
            best[group] = key
    return sorted(best.values(), key=lambda k: spec_of[k].label())


def _worst(verdicts: list[str]) -> str:
    from accelbench.verdict import severity

    return max(verdicts, key=severity) if verdicts else ""


def type_view(store, node_type: str, nodes: list[NodeEntry], verdicts: tuple[str, ...],
              history: dict[str, list[float]]) -> TypeView:
    view = TypeView(node_type, nodes)
    per_node: dict[str, dict[str, _Rates]] = {}
    for entry in nodes:
        if entry.status != "measured":
            continue
        per_node[entry.node] = _rates(store, entry.run_ids, verdicts)
        if not per_node[entry.node]:
            view.unjudged[entry.node] = f"no result with an admitted verdict ({', '.join(verdicts)})"
    for key in _headlines(per_node):
        figures = {node: NodeFigure(median(r[key].rates), r[key].unit, median(r[key].halfwidths),
                                    _worst(r[key].verdicts))
                   for node, r in per_node.items() if key in r}
        spec = next(r[key].spec for r in per_node.values() if key in r)
        centre, learnt, judgements = judge({n: f.value for n, f in figures.items()}, history.get(key, ()))
        unit = next(iter(figures.values())).unit
        view.headlines.append(HeadlineView(key, spec.label(), unit, centre, learnt, judgements, figures))
    compared = {node for h in view.headlines for node in h.figures}
    for node in per_node:
        if node not in compared and node not in view.unjudged:
            view.unjudged[node] = "none of its admitted results is a spec two nodes of its type measured"
    return view


def history_deviations(store, node_type: str, spec_keys: list[str], before_submission: str,
                       verdicts: tuple[str, ...]) -> dict[str, list[float]]:
    """spec key -> log deviations of each node from its sweep's median, over the latest sweeps of
    this node type before this one (runs gathered with a `submission` and `node_features` tag;
    submission ids begin with their time, so they sort as they were made)."""
    from accelbench.store.schema import measurement_from_row

    if not spec_keys:
        return {}
    marks = ", ".join("?" for _ in spec_keys)
    rows = store._connection().execute(  # read only, beside the Store's own queries
        "SELECT r.*, sub.value AS submission, node.value AS node FROM results r "
        "JOIN run_tags sub ON sub.run_id = r.run_id AND sub.key = 'submission' "
        "JOIN run_tags typ ON typ.run_id = r.run_id AND typ.key = 'node_features' "
        "JOIN run_tags node ON node.run_id = r.run_id AND node.key = 'node' "
        f"WHERE typ.value = ? AND sub.value < ? AND r.spec_key IN ({marks}) AND r.check_passed = 1 "
        "ORDER BY sub.value DESC", (node_type if node_type != NO_FEATURES else "", before_submission, *spec_keys))
    sweeps: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        m = measurement_from_row(row)
        if counted(m, verdicts):
            rate, _ = rate_of(m, stats.median(m.samples_s))
            if rate:
                sweeps[(row["spec_key"], row["submission"])][row["node"]].append(rate)
    found: dict[str, list[float]] = defaultdict(list)
    used: dict[str, int] = defaultdict(int)
    for (key, _submission), by_node in sweeps.items():  # newest sweeps first
        if len(by_node) >= 3 and used[key] < MAX_HISTORY_SWEEPS:
            used[key] += 1
            found[key] += list(deviations({n: median(v) for n, v in by_node.items()}).values())
    return dict(found)


def build_fleet(store, entries: list[NodeEntry], submission: str,
                verdicts: tuple[str, ...] = ("valid",)) -> FleetView:
    by_type: dict[str, list[NodeEntry]] = defaultdict(list)
    for entry in entries:
        by_type[entry.node_type or NO_FEATURES].append(entry)
    types = []
    for node_type in sorted(by_type):
        first = type_view(store, node_type, by_type[node_type], verdicts, {})
        history = history_deviations(store, node_type, [h.key for h in first.headlines], submission, verdicts)
        types.append(type_view(store, node_type, by_type[node_type], verdicts, history) if history else first)
    return FleetView(submission, verdicts, types)


def entries_from_outcomes(outcomes) -> list[NodeEntry]:
    """What gather found for each job of one sweep (cluster/gather.JobOutcome) -> node entries."""
    status_of = {"ok": "measured", "failed": "failed", "active": "pending", "unmeasured": "unmeasured"}
    entries = []
    for outcome in outcomes:
        record, state = outcome.record, outcome.state
        node = record.target.node or state.node or f"job {record.job_id or record.index}"
        status = status_of[outcome.status]
        if status == "failed" and (outcome.imported or outcome.present) and state.category == "succeeded":
            status = "measured"  # its results arrived; a problem noted on the way is in `detail`
        detail = state.reason if status == "unmeasured" else state.describe()
        if outcome.problem and status == "failed":
            detail += f"; {outcome.problem}"
        entries.append(NodeEntry(node, record.node_info.get("features", "") or NO_FEATURES, status, detail,
                                 tuple(outcome.imported) + tuple(outcome.present), tuple(outcome.log_tail)))
    return entries


def entries_from_store(store, submission: str | None) -> tuple[str, list[NodeEntry]]:
    """Without a results folder: the runs of one gathered sweep (`latest`: the newest) in the database."""
    from accelbench.errors import UsageError

    runs = [r for r in store.runs() if r.tags.get("submission") and r.tags.get("node")]
    if not runs:
        raise UsageError(f"{store.path} holds no runs gathered from `accelbench submit --each-node`; "
                         f"accepted: a results folder, or a database `accelbench gather` filled")
    wanted = runs[0].tags["submission"] if submission in (None, "latest") else submission
    chosen = [r for r in runs if r.tags["submission"] == wanted]
    if not chosen:
        known = ", ".join(dict.fromkeys(r.tags["submission"] for r in runs))
        raise UsageError(f"--submission {submission!r}: no such sweep in {store.path} (sweeps: {known})")
    by_node: dict[str, list] = defaultdict(list)
    for run in chosen:
        by_node[run.tags["node"]].append(run)
    return wanted, [NodeEntry(node, runs_[0].tags.get("node_features") or NO_FEATURES, "measured",
                              run_ids=tuple(r.id for r in runs_)) for node, runs_ in sorted(by_node.items())]
