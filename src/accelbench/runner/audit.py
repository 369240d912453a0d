"""The check covers the work that was timed: outputs of timed calls, fresh inputs, observed placement.

After the harness has timed a workload (its calls rotating through input sets, workloads/rotation.py):

1. every output buffer is filled with NaN (`poison`), then one more block of the same length is
   timed and what its calls returned is checked: a backend that never writes its output, returns a
   stale buffer, or returns the previous call's result fails here;
2. the next call gets inputs never seen before (`refresh`) and is timed alone: a backend that
   caches results for repeated inputs, or skips work, is fast in the timed blocks and slow here;
3. where the output lives is read from the array itself (backends/placement.py), not from the
   backend's claim.

Workloads that draw new random numbers every call (Monte Carlo) are judged on the last timed
call's estimate, after two timed calls have been shown to differ. A workload without
`check_output` (a plugin's) is judged by its own `verify`; its placement is still observed on
what the last timed call returned.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from accelbench.backends.placement import observe
from accelbench.results import Check
from accelbench.timing.checkpoint import checkpoint
from accelbench.timing.clock import Clock
from accelbench.units import format_seconds
from accelbench.verdict import INVALID, UNVERIFIED, VALID, Finding

# a call on fresh inputs may be slower than a call on inputs seen before (cold caches, first
# touch), but not by this much: then the timed calls did less than the work. Each attempt pairs
# the fresh call with a warm one right after it, so a burst of load slows both; the best of a few
# attempts decides.
FRESH_FACTOR = 5.0
FRESH_SLACK_S = 1e-4
FRESH_ATTEMPTS = 3


class Capture:
    """The timed call, keeping what it returned (the output the check then judges)."""

    def __init__(self, compute: Callable[[], Any]) -> None:
        self.compute, self.last = compute, None

    def __call__(self) -> Any:
        self.last = self.compute()
        return self.last


@dataclasses.dataclass
class AuditResult:
    check: Check
    findings: list[Finding]
    fresh_call_s: float | None = None


def audit(prepared, capture: Capture, synchronize: Callable[[], object], clock: Clock, device: str, *,
          calls_per_sample: int, median_s: float, overhead_s: float,
          to_host: Callable[[Any], Any] | None = None) -> AuditResult:
    findings: list[Finding] = []
    fresh_s = None
    if prepared.draws_afresh and to_host is not None:
        findings += _repeated_draws(capture, synchronize, to_host)
    if prepared.check_output is None:
        check = prepared.verify()
        findings.append(Finding(UNVERIFIED, "checked on a call of its own, not on the outputs of the timed calls "
                                            "(a workload gives check_output for that: workloads/rotation.py)"))
    else:
        if prepared.poison:
            prepared.poison()
        # at least one call per input set, so every poisoned buffer is written again
        _block(capture, synchronize, clock, max(calls_per_sample, prepared.variants))
        check = prepared.check_output(capture.last)
        if prepared.refresh and check.passed:
            check, fresh_s, found = _fresh_calls(prepared, capture, synchronize, clock, overhead_s)
            findings += found
    if not check.passed:
        findings.append(Finding(INVALID, f"check failed: {check.detail}"))
    if prepared.unverified:
        findings.append(Finding(UNVERIFIED, prepared.unverified))
    check, placement = _observed(prepared, capture.last, check, device)
    findings += placement
    return AuditResult(check, findings, fresh_s)


def _repeated_draws(capture: Capture, synchronize: Callable[[], object], to_host: Callable[[Any], Any]
                    ) -> list[Finding]:
    """Two timed calls of a workload that draws afresh each call cannot return identical results."""
    def host(output: Any) -> list:
        parts = output if isinstance(output, tuple) else (output,)
        return [np.asarray(to_host(part)) for part in parts]

    outputs = []
    for _ in range(2):
        capture()
        synchronize()
        outputs.append(host(capture.last))
    first, second = outputs
    if len(first) == len(second) and all(np.array_equal(a, b) for a, b in zip(first, second)):
        return [Finding(INVALID, "two timed calls returned identical results though each draws new random "
                                 "numbers: the backend may cache results or skip work")]
    return []


def _block(capture: Capture, synchronize: Callable[[], object], clock: Clock, calls: int) -> float:
    checkpoint()  # a stop or the spec's deadline between the audit's calls
    synchronize()
    start_s = clock.now()
    for _ in range(calls):
        capture()
    synchronize()
    return clock.now() - start_s


def _fresh_calls(prepared, capture: Capture, synchronize: Callable[[], object], clock: Clock,
                 overhead_s: float) -> tuple[Check, float, list[Finding]]:
    """A call on inputs never seen, then one on inputs seen before; both outputs checked."""
    best: tuple[float, float] | None = None
    for _ in range(FRESH_ATTEMPTS):
        prepared.refresh()
        fresh_s = max(_block(capture, synchronize, clock, 1) - overhead_s, 0.0)
        warm_s = max(_block(capture, synchronize, clock, 1) - overhead_s, 0.0)
        check = prepared.check_output(capture.last)
        if not check.passed:
            return check, fresh_s, []
        if best is None or fresh_s / max(warm_s, 1e-12) < best[0] / max(best[1], 1e-12):
            best = (fresh_s, warm_s)
        if fresh_s <= max(FRESH_FACTOR * warm_s, warm_s + FRESH_SLACK_S):
            return check, fresh_s, []
    assert best is not None  # FRESH_ATTEMPTS >= 1: the loop ran
    fresh_s, warm_s = best
    return check, fresh_s, [Finding(INVALID, f"a call on new inputs took {format_seconds(fresh_s)}, "
                                             f"{fresh_s / max(warm_s, 1e-12):,.0f}× a call on inputs seen before "
                                             f"({format_seconds(warm_s)}): the backend may cache results for "
                                             "repeated inputs or skip work")]


def _observed(prepared, output: Any, check: Check, device: str) -> tuple[Check, list[Finding]]:
    """The check with the placement read from the array; a mismatch makes the result invalid."""
    if output is None:
        return check, [Finding(VALID, "placement not observed: the timed call returned nothing to inspect")]
    target = prepared.placed(output) if prepared.placed else output
    seen = observe(target)
    if seen.device is None:
        return check, [Finding(VALID, f"placement claimed by the backend ({check.device_seen}), "
                                      f"not observed: {seen.how}")]
    checked = dataclasses.replace(check, device_seen=seen.device)
    if seen.device != device:
        return checked, [Finding(INVALID, f"the output lives on {seen.device} ({seen.how}), not on {device}: "
                                          "the work did not run where it was asked to")]
    return checked, []
