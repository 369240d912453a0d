"""What-if: how long each measured workload might take on another device. A PROJECTION, not a result.

For each verified result, its work model (Work.flops, Work.bytes_moved per call) gives a roofline
time on both devices, time ≈ max(flops / peak FLOP/s of the dtype, bytes / memory bandwidth). The
result's efficiency here is that bound over the measured time; the projection assumes the target
reaches the same efficiency against its own ceilings: projected = target bound / efficiency.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from accelbench.report.compare.ceilings import BANDWIDTH, flops_metrics, row_peak, run_best_rates
from accelbench.report.compare.compare import spec_label
from accelbench.report.data import RunData
from accelbench.devices import datasheets
from accelbench.errors import UsageError
from accelbench.results import Measurement, Spec
from accelbench.timing import stats
from accelbench.workloads.registry import crosses_host_link

# short names for the usual form factor; the other variants stay reachable by their own key
TARGET_ALIASES = {
    "h100": "h100-sxm", "h200": "h200-sxm", "a100": "a100-sxm4-80gb", "v100": "v100-sxm2",
    "k40": "tesla-k40", "k40m": "tesla-k40", "rtx3090": "rtx-3090", "3090": "rtx-3090",
    "rtx4090": "rtx-4090", "4090": "rtx-4090", "m1": "apple-m1", "m2": "apple-m2", "m3": "apple-m3",
    "uhd630": "intel-uhd-630", "5300m": "radeon-pro-5300m",
}
SOURCE_PROVENANCE = ("table", "formula")  # the same kind of figure as the target's datasheet
# Every target is a GPU: a call is at least one kernel launched and waited for. An assumption, not a
# measurement: NVIDIA's CUDA C++ Best Practices Guide puts launch overhead at a few µs, and an empty
# kernel launched and synchronised takes about 5 µs on current discrete GPUs (more through a framework).
LAUNCH_FLOOR_S = 5e-6
ASSUMPTIONS = (
    "roofline: on each device, time ≈ max(FLOPs / peak FLOP/s for the dtype, bytes / memory bandwidth)",
    "the workload reaches the same share of that bound on the target as it did here "
    "(efficiency = roofline time here / measured time); above 100% the source ceiling is too low, "
    "so it is capped at 100%",
    "target ceilings are the datasheet's per-device figures; source ceilings are datasheet or formula "
    "figures (for memory bandwidth also the best STREAM rate of the run, never the result's own) — "
    "each row names its own; every projection is bounded by the target's peak",
    "matrix units where the dtype has them (fp64, fp16, bf16 matmul); fp32 without TF32",
    "resident compute only: host↔device transfers and the first call (compilation) are not projected; "
    f"each call is at least one kernel launch and its wait, taken as {LAUNCH_FLOOR_S * 1e6:g} µs on the "
    "target (CUDA's launch overhead on a discrete GPU is a few µs): a projection below it is raised to "
    "it and is only a lower bound; problems small enough to live in cache project too optimistically",
    "the target runs the same algorithm with an equally well tuned library",
)


def accepted_targets() -> list[str]:
    return sorted({row.key for row in datasheets.rows()} | set(TARGET_ALIASES))


def resolve_target(name: str) -> datasheets.DatasheetRow:
    """A datasheet row from its key or a short name ("h100" is the SXM board); else UsageError."""
    text = str(name).strip().lower()
    key = TARGET_ALIASES.get(text, text)
    for row in datasheets.rows():
        if row.key == key:
            return row
    raise UsageError(f"unknown target device {name!r}; accepted: {', '.join(accepted_targets())}")


@dataclass(frozen=True)
class Ceiling:
    metric: str
    value: float      # FLOP/s or B/s
    provenance: str   # "table", "formula", "measured in this run", "measured"
    detail: str = ""


def roofline_time_s(flops: float, bytes_moved: float, peak_flops: float | None, bandwidth: float | None) -> float:
    """The roofline bound; a term with no work needs no ceiling."""
    if (flops and not peak_flops) or (bytes_moved and not bandwidth):
        raise ValueError(f"roofline of {flops} flop and {bytes_moved} bytes needs both ceilings, "
                         f"got {peak_flops} flop/s and {bandwidth} B/s")
    compute_s = flops / peak_flops if flops and peak_flops else 0.0
    memory_s = bytes_moved / bandwidth if bytes_moved and bandwidth else 0.0
    return max(compute_s, memory_s)


def _inventory_ceiling(device: dict[str, Any], metrics: tuple[str, ...], provenance: str) -> Ceiling | None:
    for metric in metrics:
        for peak in device.get("peaks") or []:
            if peak.get("metric") == metric and peak.get("provenance") == provenance and peak.get("value"):
                return Ceiling(metric, float(peak["value"]), provenance, str(peak.get("detail", "")))
    return None


def source_ceiling(run: RunData, device_id: str, metrics: tuple[str, ...], spec: Spec | None = None) -> Ceiling | None:
    """The device's physical ceiling (datasheet, then formula) for the first metric found.

    A measured rate is a ceiling only for memory bandwidth (STREAM is the accepted practical one),
    and never for the result that set it: its efficiency would be 100% by definition, and the
    projection the target's datasheet peak, whatever the device really does.
    """
    device = run.device_records().get(device_id, {})
    for provenance in SOURCE_PROVENANCE:
        found = _inventory_ceiling(device, metrics, provenance)
        if found:
            return found
    if metrics[:1] != (BANDWIDTH,):
        return None
    for rate in run_best_rates(run):
        if rate.device == device_id and rate.metrics[:1] == metrics[:1] and rate.spec != spec:
            return Ceiling(metrics[0], rate.rate, "measured in this run", spec_label(rate.spec))
    return None


@dataclass(frozen=True)
class Projection:
    spec: Spec
    measured_s: float
    projected_s: float
    efficiency: float          # of the source roofline, after capping
    capped: bool
    source_flops: Ceiling | None
    source_bandwidth: Ceiling | None
    target_flops: Ceiling | None
    target_bandwidth: Ceiling | None
    source_bound: str          # "compute" | "memory"
    target_bound: str          # "compute" | "memory" | "launch" (the floor, not the roofline)
    roofline_s: float = 0.0    # the roofline projection before the launch floor

    @property
    def speedup(self) -> float:
        return self.measured_s / self.projected_s

    @property
    def lower_bound(self) -> bool:
        """Too small to project: the launch floor, not the roofline, sets the time (at least this)."""
        return self.target_bound == "launch"

    @property
    def assumption(self) -> str:
        if self.lower_bound:
            return (f"too small to project: the roofline gives {self.roofline_s * 1e6:.2g} µs, under one kernel "
                    f"launch ({LAUNCH_FLOOR_S * 1e6:g} µs assumed): at least that, a lower bound")
        here = self.source_flops if self.source_bound == "compute" else self.source_bandwidth
        there = self.target_flops if self.target_bound == "compute" else self.target_bandwidth
        return (f"{self.efficiency:.0%} of {there.metric if there else '?'} there, as here against "
                f"{here.metric if here else '?'} ({here.provenance if here else '?'})")

    def to_dict(self) -> dict[str, Any]:
        def ceiling(c):
            return None if c is None else {"metric": c.metric, "value": c.value, "provenance": c.provenance,
                                           "detail": c.detail}
        return {"spec": self.spec.to_dict(), "label": spec_label(self.spec), "measured_s": self.measured_s,
                "projected_s": self.projected_s, "projected_speedup": self.speedup, "efficiency": self.efficiency,
                "efficiency_capped": self.capped, "assumption": self.assumption, "source_bound": self.source_bound, "target_bound": self.target_bound,
                "roofline_s": self.roofline_s, "launch_floor_s": LAUNCH_FLOOR_S, "lower_bound": self.lower_bound,
                "source_flops": ceiling(self.source_flops), "source_bandwidth": ceiling(self.source_bandwidth),
                "target_flops": ceiling(self.target_flops), "target_bandwidth": ceiling(self.target_bandwidth)}


def _bound(flops: float, bytes_moved: float, flops_c: Ceiling | None, bw_c: Ceiling | None) -> str:
    compute_s = flops / flops_c.value if flops and flops_c else 0.0
    memory_s = bytes_moved / bw_c.value if bytes_moved and bw_c else 0.0
    return "compute" if compute_s >= memory_s else "memory"


def _ceilings(m: Measurement, run: RunData, target: datasheets.DatasheetRow):
    """(source flops, source bandwidth, target flops, target bandwidth) or a reason text."""
    flops_c = bw_c = t_flops = t_bw = None
    if m.work.flops:
        metrics = flops_metrics(m.spec.workload, m.spec.param("dtype"))
        if not metrics:
            return "no dtype parameter: cannot choose a FLOP/s ceiling"
        flops_c = source_ceiling(run, m.spec.device, metrics, m.spec)
        found = row_peak(target, metrics)
        if flops_c is None:
            return (f"no datasheet or formula {metrics[0]} peak for {m.spec.device}: its efficiency cannot be "
                    "judged (its own measured rate as the ceiling would make it 100% by definition)")
        if found is None:
            return f"the {target.name} datasheet gives no {' or '.join(metrics)} figure"
        t_flops = Ceiling(found[0], found[1], "table", target.source)
    if m.work.bytes_moved:
        bw_c = source_ceiling(run, m.spec.device, (BANDWIDTH,), m.spec)
        found = row_peak(target, (BANDWIDTH,))
        if bw_c is None:
            return (f"no memory-bandwidth ceiling known for {m.spec.device} apart from this result itself: no "
                    "datasheet figure, and no plainly valid bandwidth result of another spec in this run (noisy "
                    "ones set no ceiling; run stream on it in the same run)")
        if found is None:
            return f"the {target.name} datasheet gives no memory bandwidth"
        t_bw = Ceiling(BANDWIDTH, found[1], "table", target.source)
    return flops_c, bw_c, t_flops, t_bw


def project_measurement(m: Measurement, run: RunData, target: datasheets.DatasheetRow) -> Projection | str:
    """One result projected onto `target`, or the reason it cannot be."""
    if not m.valid:
        return ("check failed: a wrong answer is not projected" if not m.check.passed
                else f"{m.verdict}: {m.verdict_reasons[0] if m.verdict_reasons else ''}; not projected")
    if crosses_host_link(m):
        return "host↔device copies cross the host link (PCIe, NVLink): no device roofline models them"
    if not m.work.flops and not m.work.bytes_moved:
        return "no work model (flops and bytes per call are both 0)"
    found = _ceilings(m, run, target)
    if isinstance(found, str):
        return found
    flops_c, bw_c, t_flops, t_bw = found
    measured_s = stats.median(m.samples_s)
    if measured_s <= 0:
        return "median time of zero"
    w = m.work
    source_s = roofline_time_s(w.flops, w.bytes_moved, flops_c and flops_c.value, bw_c and bw_c.value)
    target_s = roofline_time_s(w.flops, w.bytes_moved, t_flops and t_flops.value, t_bw and t_bw.value)
    efficiency = source_s / measured_s
    capped = efficiency > 1.0
    efficiency = min(efficiency, 1.0)
    roofline_s = target_s / efficiency
    bound_there = "launch" if roofline_s < LAUNCH_FLOOR_S else _bound(w.flops, w.bytes_moved, t_flops, t_bw)
    return Projection(m.spec, measured_s, max(roofline_s, LAUNCH_FLOOR_S), efficiency, capped, flops_c, bw_c,
                      t_flops, t_bw, _bound(w.flops, w.bytes_moved, flops_c, bw_c), bound_there, roofline_s)


@dataclass(frozen=True)
class ProjectionReport:
    run: RunData
    target: datasheets.DatasheetRow
    projections: tuple[Projection, ...]
    not_projected: tuple[tuple[Spec, str], ...]
    assumptions: tuple[str, ...] = ASSUMPTIONS

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "PROJECTION (not a measurement)", "run_id": self.run.run_id,
                "target": {"key": self.target.key, "name": self.target.name, "source": self.target.source},
                "assumptions": list(self.assumptions),
                "projections": [p.to_dict() for p in self.projections],
                "not_projected": [{"spec": s.to_dict(), "label": spec_label(s), "reason": r}
                                  for s, r in self.not_projected]}


def project_run(run: RunData, target: datasheets.DatasheetRow | str) -> ProjectionReport:
    """Every result of `run` projected onto `target` (a datasheet row or a name resolve_target takes)."""
    row = resolve_target(target) if isinstance(target, str) else target
    done, skipped = [], []
    for m in run.measurements:
        found = project_measurement(m, run, row)
        if isinstance(found, Projection):
            done.append(found)
        else:
            skipped.append((m.spec, found))
    return ProjectionReport(run, row, tuple(done), tuple(skipped))
