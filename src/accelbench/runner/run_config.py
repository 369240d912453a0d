"""How one run is measured and where it is stored (RunConfig): what run_plan needs besides the plan and
the backends, each field typed and documented: the seam a run is started through."""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from accelbench.results import Measurement, Skip
from accelbench.runner import deadline
from accelbench.runner.plan import PlanItem
from accelbench.timing.rigor import Rigor
from accelbench.vocabulary import DEFAULT_SEED

if TYPE_CHECKING:
    from accelbench.devices.inventory import Inventory


@dataclass(frozen=True)
class RunConfig:
    """How one run is measured and where it is stored: everything run_plan needs besides the plan and
    the backends. The rigor is a Rigor: a name is resolved once, where a run starts (timing.rigor.get_rigor)."""

    rigor: Rigor
    """how hard each measurement tries: interval target, time budget, samples (timing/rigor.py)"""
    db: str | None = None
    """the results database (None: ACCELBENCH_DB, else the user data directory)"""
    seed: int = DEFAULT_SEED
    """the seed every workload's inputs are drawn from (stored with the run)"""
    selection: Mapping[str, object] = field(default_factory=dict)
    """what was asked for (workloads, sizes, devices, ...), stored with the run for `runs` and `compare`"""
    tags: dict[str, str] | None = None
    """free labels stored with the run (a node name, a Slurm job id)"""
    inventory: Inventory | None = None
    """the devices and their peaks (None: probed now, with this host's measured ceilings)"""
    on_start: Callable[[PlanItem], None] | None = None
    """called before each spec is measured (a progress display)"""
    on_done: Callable[[PlanItem, Measurement | Skip], None] | None = None
    """called with each spec's result or skip once it is stored"""
    debug: bool = False
    """a failed spec's reason carries its traceback"""
    telemetry: bool = True
    """sample the devices' utilisation, clocks and power over the run"""
    timeout: float | None = deadline.DEFAULT_SPEC_TIMEOUT_S
    """seconds each spec may take before it is ended and stored as failed (None: no limit)"""
