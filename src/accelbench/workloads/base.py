"""What a workload declares: its parameters, work model, how to prepare it on a device, what to time,
and how its output is checked against a float64 reference.

A workload that cannot run somewhere raises Unsupported("reason"); the run records a skip.
"""
from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Protocol

from accelbench.results import Check, Params, Work
from accelbench.vocabulary import Role

if TYPE_CHECKING:
    from accelbench.backends.base import Backend, DeviceArray
    from accelbench.timing.rigor import Rigor


class SelfTiming(Protocol):
    """A workload that times itself (Prepared.self_timed): measures at `rigor`, a sync before every clock read."""

    def __call__(self, *, rigor: Rigor) -> SelfTimed: ...


@dataclass
class Prepared:
    """One workload instance with its inputs on the device.

    `compute` is the call timed as the resident (on-device) time and returns the output; `to_device`
    and `to_host` are the transfers around it (None where the device computes on host memory).

    The check covers the work that was timed (runner/audit.py): `check_output` judges what a timed
    call returned (and what the earlier calls on the other input sets left), after `poison` has
    filled the output buffers with NaN; `refresh` gives the next call input values never seen, so
    a backend that caches by input cannot pass. Workloads without these (some statistics, ddp)
    give `verify`, which runs and checks a call of its own.
    """

    compute: Callable[[], DeviceArray]
    verify: Callable[[], Check] | None = None
    to_device: Callable[[], object] | None = None
    to_host: Callable[[], object] | None = None
    release: Callable[[], None] | None = None
    #: workload-specific figures after timing and verification (time to accuracy, latency
    #: percentiles, peak memory...), stored in Measurement.extra; names carry units
    metrics: Callable[[], dict[str, object]] | None = None
    #: for workloads that must time themselves (several processes: ddp): called as
    #: self_timed(rigor=Rigor), returns SelfTimed; the harness is skipped
    self_timed: SelfTiming | None = None
    #: a fixed block size for the harness (1: each sample is one training step or inference
    #: batch), and samples taken even past the rigor's budget (a workload's own minimum)
    calls_per_block: int | None = None
    min_samples: int = 0
    #: given the samples per phase (seconds per call) once timing ends, before metrics()
    record_samples: Callable[[dict[str, tuple[float, ...]]], None] | None = None
    check_output: Callable[[DeviceArray], Check] | None = None
    poison: Callable[[], None] | None = None
    refresh: Callable[[], None] | None = None
    #: run the timed op once on inputs already seen, untimed (wakes a thread pool before a timed call)
    wake: Callable[[], None] | None = None
    #: the array whose placement proves where the work ran (default: the output itself)
    placed: Callable[[DeviceArray], DeviceArray] | None = None
    #: why the outputs cannot be checked (no reference): the result is then "unverified"
    unverified: str | None = None
    #: input sets the timed calls rotate through (workloads/rotation.py)
    variants: int = 1
    #: each call draws new random numbers (a Monte Carlo estimate), so two calls' outputs must differ
    draws_afresh: bool = False
    #: before every timed block alike, given its calls (runner/block_audit.py): new input values and
    #: poisoned outputs, so any block may be the checked one and none is fast by repeating work
    before_block: Callable[[int], None] | None = None
    #: a check over every output the audited blocks judged, taken together (a Monte Carlo workload's
    #: spread against the standard errors its estimates claim: workloads/stats/draw_spread.py)
    judged_together: Callable[[], Check] | None = None
    #: where judging is split in two: the outputs read right after a block (cheap), and judged later,
    #: away from the timed blocks (its temporaries would evict their data: runner/block_audit.py)
    snapshot_output: Callable[[DeviceArray], object] | None = None
    judge_snapshot: Callable[[object], Check] | None = None
    #: how many more judged outputs `judged_together` wants before it can decide (0: enough)
    more_judged: Callable[[], int] | None = None

    def called_and_checked(self, synchronize: Callable[[], object]) -> Check:
        """One call per input set, as an audited block makes them, and the check of what they
        returned (what a test or a one-off check needs; the runner's audit does more)."""
        if self.check_output is None:
            self.compute()
            synchronize()
            return self.verify() if self.verify else Check(False, float("inf"), 0.0, "no check")
        if self.before_block is not None:
            self.before_block(max(1, self.variants))  # as every timed block: new input values, poisoned outputs
        elif self.poison:
            self.poison()  # as the audit does: a training step's check replays what follows this
        output = None
        for _ in range(max(1, self.variants)):
            output = self.compute()
        synchronize()
        return self.check_output(output)

    def end_to_end(self) -> Callable[[], object] | None:
        if self.to_device is None and self.to_host is None:
            return None
        steps = [s for s in (self.to_device, self.compute, self.to_host) if s is not None]

        def whole_trip() -> object:
            result = None
            for step in steps:
                result = step()
            return result
        return whole_trip


@dataclass
class SelfTimed:
    """Samples a workload measured itself, with a device sync before every clock read."""

    phases_s: dict[str, tuple[float, ...]]
    first_call_s: float
    warnings: tuple[str, ...] = ()
    calls_per_sample: int = 1
    target_met: bool = True


class Workload(abc.ABC):
    """What every workload declares (the abstract methods: REQUIRED_METHODS); the registry refuses a
    plugin without them (workloads/registry.py), naming it and what it lacks."""

    name: str = ""
    description: str = ""
    #: the version of what it measures: raise it when a change to the code makes its figures
    #: incomparable with earlier ones (another kernel, another input, another check). Every result
    #: records it, and `accelbench compare` names a change as a difference between two runs.
    version: str = "1"
    #: the parameter `--sizes` sets ("n" for matmul, "bytes" for transfer, ...)
    size_param: str = "n"
    size_unit: str = "elements"
    #: dtypes it can run in, in the order a sweep shows them
    dtypes: tuple[str, ...] = ("float64", "float32")
    #: what its figures say about a device, one of ROLES (accelbench.vocabulary), stored with each result;
    #: the answer, the roofline and the speed-ups read it, never the workload's name. None (a third party that declares nothing): shown in the
    #: answer under its own name where no declared work was run, and never a compute ceiling
    role: Role | None = None
    #: the peak its rate is read against: "matrix" (dense products, on matrix units where the dtype
    #: has them), "vector", "memory_bandwidth", or None (no ceiling applies)
    judged_against: str | None = None
    #: True where its best valid rate on a device is that device's measured ceiling (built-ins only)
    measures_ceiling: bool = False
    #: what the CPU side of its speed-ups is: "numpy" (the CPU baseline backend), or "framework",
    #: the candidate's own backend on the CPU, on all cores and on one (deep learning: numpy runs none)
    cpu_baseline: str = "numpy"

    @abc.abstractmethod
    def grid(self, sizes: list[int] | None, dtypes: list[str] | None, quick: bool) -> list[Params]:
        """Parameter dicts to run; `sizes`/`dtypes` override the defaults where given."""
        raise NotImplementedError

    @abc.abstractmethod
    def work(self, params: Params) -> Work:
        raise NotImplementedError

    @abc.abstractmethod
    def footprint_bytes(self, params: Params) -> int:
        """Device memory the instance needs, so absurd sizes are refused before anything runs."""
        raise NotImplementedError

    @abc.abstractmethod
    def prepare(self, backend: Backend, device: str, params: Params, seed: int) -> Prepared:
        raise NotImplementedError

    def cannot_run(self, backend: Backend, device: str, params: Params) -> str | None:
        """Why this combination can never run, known before anything is prepared (a dtype the device
        lacks, a transfer where there is no separate memory): the plan leaves it out and says so in
        one line. None where it may run (prepare can still raise Unsupported)."""
        return None


REQUIRED_METHODS = tuple(sorted(Workload.__abstractmethods__))


def missing_methods(cls: object) -> tuple[str, ...]:
    """What a workload class lacks of the contract (all of it for a class that is not a Workload)."""
    if not isinstance(cls, type) or not issubclass(cls, Workload):
        return REQUIRED_METHODS
    return tuple(sorted(getattr(cls, "__abstractmethods__", ())))
