"""What the machine itself did between two runs: their machine references (timing/machine_reference.py).

Every run times one fixed CPU kernel at its start, middle and end. Between runs A and B its ratio
(reference time A / time B, the orientation of the specs' speed-ups) says how much the machine alone
moved; the spread of each run's own readings says how far that ratio can be trusted. compare widens
every spec's noise band by exactly what the reference cannot rule out (|log ratio| + its tolerance)
instead of counting the specs' common shift as noise: a uniform 1.3× slowdown that the reference does
not show is the code's; one the reference shows too cannot be told from the machine's.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from accelbench.report.data import RunData
from accelbench.results import Measurement
from accelbench.timing import all_cores_probe, machine_reference
from accelbench.timing.stats import RatioCI

# the ratio of two runs' references moves this much on a quiet machine even when their readings
# agreed within each run (placement of the run's own process, turbo): never trust it finer
TOLERANCE_FLOOR = 0.03


def ratio_text(speedup: float) -> str:
    """One convention for every ratio shown: "3.17× slower", "1.20× faster", "1.00×" (never 0.32×)."""
    if not speedup > 0 or not math.isfinite(speedup):
        return "—"
    if round(speedup, 2) == 1.0 or round(1 / speedup, 2) == 1.0:
        return "1.00×"
    return f"{1 / speedup:.2f}× slower" if speedup < 1 else f"{speedup:.2f}× faster"


def ci_text(ci: RatioCI) -> str:
    """A speed-up and its interval in one convention: "3.17× slower [3.05–3.30×]" (the bracket in the
    point's own direction: times as long when slower, times as fast when faster)."""
    point = ratio_text(ci.ratio)
    if ci.ratio < 1 and point != "1.00×":
        return f"{point} [{1 / ci.high:.2f}–{1 / ci.low:.2f}×]"
    return f"{point} [{ci.low:.2f}–{ci.high:.2f}×]"


COMPUTE_INTENSITY = 1.0  # flop per byte: a spec at or above it is set against the compute part


@dataclass(frozen=True)
class PartShift:
    """One part of the reference (total, compute, memory): how it moved from A to B."""

    speedup: float         # reference time A / time B (< 1: the machine was slower during B)
    tolerance_log: float   # how far that ratio itself may be off (from both runs' spreads)
    spread_a: float
    spread_b: float

    @property
    def shift_log(self) -> float:
        return math.log(self.speedup)

    @property
    def allowance_log(self) -> float:
        """The largest change of the machine alone that the reference does not rule out (log)."""
        return abs(self.shift_log) + self.tolerance_log

    @property
    def moved(self) -> bool:
        """The reference itself moved beyond its own spread between the runs."""
        return abs(self.shift_log) > self.tolerance_log

    def agrees_with(self, common_log: float) -> bool:
        """A common shift of the specs that the reference shows as well (within its tolerance)."""
        return abs(common_log - self.shift_log) <= self.tolerance_log

    def text(self) -> str:
        return (f"{ratio_text(self.speedup)} in B, ±{math.expm1(self.tolerance_log):.1%}: its readings spread "
                f"{self.spread_a:.1%} in A, {self.spread_b:.1%} in B")

    def to_dict(self) -> dict:
        return {"speedup": self.speedup, "text": ratio_text(self.speedup), "moved": self.moved,
                "tolerance": math.expm1(self.tolerance_log), "spread_a": self.spread_a, "spread_b": self.spread_b}


@dataclass(frozen=True)
class MachineShift:
    """The machine reference of both runs: the whole kernel, and its compute and memory parts. A spec
    is set against the part its own work resembles (flop per byte), the summary against the whole."""

    total: PartShift
    compute: PartShift
    memory: PartShift
    readings: tuple[int, int]

    @property
    def speedup(self) -> float:
        return self.total.speedup

    @property
    def moved(self) -> bool:
        return self.total.moved

    def agrees_with(self, common_log: float) -> bool:
        return self.total.agrees_with(common_log)

    def for_spec(self, m: Measurement) -> PartShift:
        """The part of the reference a spec's own work resembles (the total when its work is unknown)."""
        flops, moved = m.work.flops, m.work.bytes_moved
        if not flops and not moved:
            return self.total
        return self.compute if not moved or flops / moved >= COMPUTE_INTENSITY else self.memory

    def for_pair(self, a: Measurement, b: Measurement) -> list[tuple[PartShift, str]]:
        """What a spec's band is widened by, each with its name: the reference's part its work resembles
        and, where both runs took one beside the spec, the all-cores probe. Both count: a multi-thread
        result moves with the machine's speed (the reference: the memory part for a stream, which the
        compute probe does not track) and with its cores' work together (the probe: the host's all-core
        phases, which the one-thread reference cannot see)."""
        part = self.for_spec(a)
        name = {id(self.compute): "compute", id(self.memory): "memory"}.get(id(part), "whole")
        found = [(part, f"machine reference ({name} part)")]
        probed = probe_shift(a, b)
        if probed is not None:
            found.append((probed, "all-cores probe beside this spec"))
        return found

    def text(self) -> str:
        return (f"machine reference {self.total.text()}; compute part {ratio_text(self.compute.speedup)}, "
                f"memory part {ratio_text(self.memory.speedup)}")

    def to_dict(self) -> dict:
        return {**self.total.to_dict(), "compute": self.compute.to_dict(), "memory": self.memory.to_dict(),
                "readings_a": self.readings[0], "readings_b": self.readings[1]}


def _part(a: RunData, b: RunData, part: str) -> PartShift | None:
    ref_a, ref_b = machine_reference.stored(a.machine, part), machine_reference.stored(b.machine, part)
    if ref_a is None or ref_b is None:
        return None
    tolerance = max(math.log1p(TOLERANCE_FLOOR), ref_a.spread_log + ref_b.spread_log)
    return PartShift(ref_a.total_s / ref_b.total_s, tolerance, ref_a.spread, ref_b.spread)


def machine_shift(a: RunData, b: RunData) -> MachineShift | None:
    """None unless both runs carry a reference of the same kernel (older runs and exports do not)."""
    total, compute, memory = (_part(a, b, p) for p in ("total_s", "matmul_s", "memory_s"))
    if total is None or compute is None or memory is None:
        return None
    readings = (machine_reference.stored(a.machine).readings, machine_reference.stored(b.machine).readings)  # type: ignore[union-attr]
    return MachineShift(total, compute, memory, readings)


def probe_shift(a: Measurement, b: Measurement) -> PartShift | None:
    """The host's all-core speed beside spec A against beside spec B (timing/all_cores_probe.py): None
    unless both carry a probe on the same threads. Its tolerance: half of each probe's own move while
    its spec was timed (the spec's median lies between its two readings), at least TOLERANCE_FLOOR."""
    probe_a, probe_b = all_cores_probe.stored(a.telemetry), all_cores_probe.stored(b.telemetry)
    if probe_a is None or probe_b is None or probe_a.threads != probe_b.threads:
        return None
    tolerance = max(math.log1p(TOLERANCE_FLOOR), (probe_a.spread_log + probe_b.spread_log) / 2)
    return PartShift(probe_a.time_s / probe_b.time_s, tolerance, math.expm1(probe_a.spread_log),
                     math.expm1(probe_b.spread_log))
