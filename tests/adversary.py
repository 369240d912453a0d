"""Detection power: every mutation (tests/mutants.py) over every core workload, at several strengths.

For each (mutation, workload, size, strength) the mutant is measured through the runner as a
user's run would be (sync probe, timing, audit, rate bound); its rate inflation is the honest
backend's median over the mutant's, both measured here. The figure that matters is the largest
inflation a mutation reaches without being found invalid (`undetected`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from mutants import ASYNC_KINDS, KINDS, Mutant

from accelbench.results import Spec
from accelbench.runner.execute import TrustContext, measure_item
from accelbench.runner.plan import PlanItem
from accelbench.timing.rigor import Rigor
from accelbench.verdict import INVALID, NOISY, UNVERIFIED, VALID

# short measurements: the suite runs hundreds of them; a missed target is noisy, never invalid
RIGOR = Rigor("adversary", target_rel_ci=0.05, budget_s=0.25, min_samples=6, max_samples=60,
              max_warmup_samples=4, max_warmup_s=0.05, min_block_s=0.002)

WORKLOADS = {
    "matmul": ({"n": 160, "dtype": "float64"}, {"n": 384, "dtype": "float32"}),
    "stream": ({"kernel": "triad", "n": 1 << 15, "dtype": "float64"},
               {"kernel": "copy", "n": 1 << 22, "dtype": "float64"}),
    "memcpy": ({"direction": "h2d", "bytes": 1 << 20, "pinned": False},
               {"direction": "d2h", "bytes": 16 << 20, "pinned": False}),
    "reduce": ({"n": 1 << 15, "dtype": "float64"}, {"n": 1 << 22, "dtype": "float32"}),
    "elementwise": ({"n": 1 << 15, "dtype": "float32"}, {"n": 1 << 22, "dtype": "float64"}),
}
STRENGTHS = (1.25, 2.0, 4.0, 10.0)
# kinds whose strength is a whole number of calls (1 would be no mutation), and whose inflation
# cannot exceed their strength (so load noise in the measured figure is capped by it)
WHOLE = {"every_kth", "partial_rewrite", "opaque_partial"}
NOMINAL = WHOLE | {"skip_fraction"}
HONEST_REPEATS = 3  # the honest baseline is the fastest of a few: load only ever slows a measurement
# reasons that mark a result as unproven (not a plain rate) without making it invalid
FLAGS = ("could not be proven", "did not all finish", "not observed")
FIXED = {"sync_stops", "claim_device", "opaque_arrays", "zero_copy_upload"}  # one strength is enough


@dataclass(frozen=True)
class Trial:
    kind: str
    workload: str
    params: dict
    strength: float
    status: str
    inflation: float
    reason: str
    reasons: tuple[str, ...] = ()

    @property
    def flagged(self) -> bool:
        """Not invalid, but marked as not proven: noisy or unverified for a truth check's reason."""
        return self.status in (NOISY, UNVERIFIED) and any(p in r for r in self.reasons for p in FLAGS)

    @property
    def undetected(self) -> bool:
        """Counted as a plain rate: valid, or noisy only for load."""
        return self.status not in (INVALID, "failed") and not self.flagged


def applies(kind: str, workload: str, params: dict) -> bool:
    if kind == "zero_copy_upload":
        return workload == "memcpy" and params["direction"] == "h2d"
    if workload == "memcpy":
        return kind in ("skip_fraction", "zero_copy_upload", "claim_device")
    return True


@functools.lru_cache(maxsize=1)
def devices() -> dict:
    from accelbench.devices.inventory import collect_inventory

    return {d.id: d for d in collect_inventory(("cpu",)).devices}


def measure(kind: str, workload: str, params: dict, strength: float = 1.0):
    backend = Mutant(kind, strength, separate=workload == "memcpy")
    device = "cuda:0" if kind == "claim_device" else "cpu"
    spec = Spec.make(workload, backend.name, device, **params)
    with backend.threads(1):
        return measure_item(PlanItem(spec, 1), backend, RIGOR, seed=17, trust=TrustContext(devices=devices()))


def _median(m) -> float:
    return float(np.median(m.samples_s)) if m.samples_s else float("nan")


def trial(kind: str, workload: str, params: dict, strength: float, honest_s: float) -> Trial:
    try:
        m = measure(kind, workload, params, strength)
    except Exception as error:  # noqa: BLE001 - a mutant that breaks the run is caught, as a failed spec
        return Trial(kind, workload, params, strength, "failed", 0.0, f"{type(error).__name__}: {error}")
    mutant_s = _median(m)
    inflation = honest_s / mutant_s if mutant_s > 0 else float("inf")
    if kind in NOMINAL:
        inflation = min(inflation, strength)
    return Trial(kind, workload, params, strength, m.verdict, inflation, (m.verdict_reasons or ("",))[0],
                 tuple(m.verdict_reasons))


def sweep(kinds=KINDS, workloads=tuple(WORKLOADS), sizes=(0, 1), strengths=STRENGTHS) -> list[Trial]:
    trials = []
    for workload in workloads:
        for index in sizes:
            params = WORKLOADS[workload][index]
            runs = [measure("honest", workload, params) for _ in range(HONEST_REPEATS)]
            honest_s = min(_median(m) for m in runs)
            trials += [Trial("honest", workload, params, 1.0, m.verdict, 1.0, (m.verdict_reasons or ("",))[0],
                             tuple(m.verdict_reasons)) for m in runs]
            for kind in kinds:
                if not applies(kind, workload, params):
                    continue
                chosen = [s for s in strengths if round(s) > 1] if kind in WHOLE else list(strengths)
                for strength in ((strengths[-1],) if kind in FIXED else chosen):
                    trials.append(trial(kind, workload, params, strength, honest_s))
    return trials


def worst_undetected(trials: list[Trial]) -> dict[tuple[str, str], float | None]:
    """(kind, workload) -> the largest inflation not found invalid (None: every trial was caught)."""
    table: dict[tuple[str, str], float | None] = {}
    for t in trials:
        if t.kind == "honest":
            continue
        key = (t.kind, t.workload)
        table.setdefault(key, None)
        if t.undetected:
            table[key] = max(table[key] or 0.0, t.inflation)
    return table


def render(trials: list[Trial]) -> str:
    table = worst_undetected(trials)
    workloads = list(dict.fromkeys(t.workload for t in trials))
    lines = ["| mutation | " + " | ".join(workloads) + " |", "|---" * (len(workloads) + 1) + "|"]
    for kind in dict.fromkeys(k for k, _ in table):
        cells = []
        for w in workloads:
            if (kind, w) not in table:
                cells.append("n/a")
            else:
                worst = table[(kind, w)]
                cells.append("caught" if worst is None else f"{worst:.2f}×")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    honest = [t for t in trials if t.kind == "honest"]
    refused = [t for t in honest if t.status == INVALID]
    lines.append(f"\nhonest: {len(honest) - len(refused)}/{len(honest)} not invalid "
                 f"({sum(t.status == VALID for t in honest)} valid)")
    return "\n".join(lines)


__all__ = ["ASYNC_KINDS", "KINDS", "Trial", "render", "sweep", "worst_undetected"]
