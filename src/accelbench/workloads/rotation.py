"""Input sets used in turn by the timed calls, so the check can cover the work that was timed.

Each input set (a "variant") has its own inputs on the device, its own output buffer and its own
float64 reference. Successive calls never see the same inputs, so a backend that returns the
result of the previous call, or skips a call whose inputs look unchanged, gives a wrong output
for one of them; `poison` fills the buffers with NaN so an output that was never written shows;
`refresh` replaces the next variant with values never seen before, so a cache keyed on the
inputs misses and the call must do the work (runner/audit.py times that call).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from accelbench.results import Check
from accelbench.workloads.base import Prepared

VARIANTS = 2
SEED_STRIDE = 7919  # variant k draws its inputs from seed + k * SEED_STRIDE


@dataclass
class Variant:
    inputs: list[Any]                 # on the device
    reference: np.ndarray             # float64, what the output must be
    out: Any = None                   # an output buffer on the device, where the op writes into one
    last: Any = None                  # what the last call on this variant returned
    hosts: list[np.ndarray] = field(default_factory=list)  # the inputs' host values (for transfers)
    key: int = 0                      # which variant this is: 0, 1, ... (refreshed ones count on)
    #: frees what the variant holds outside its own fields (a kernel runner's buffers), once replaced
    drop: Callable[[], None] | None = None


class Rotation:
    """`make(index)` builds variant `index` (0, 1, ... and higher for refreshed ones)."""

    def __init__(self, make: Callable[[int], Variant], judge: Callable[[Any, Variant], Check],
                 count: int = VARIANTS) -> None:
        self.make, self.judge = make, judge
        self.variants = [self._made(k) for k in range(count)]
        self.turn = -1
        self.made = count
        self.settle: Callable[[Any], None] | None = None
        self.fill: Callable[[Any], bool] | None = None

    def _made(self, key: int) -> Variant:
        variant = self.make(key)
        variant.key = key
        return variant

    @property
    def current(self) -> Variant:
        """The variant the last call used."""
        return self.variants[self.turn % len(self.variants)]

    @property
    def upcoming(self) -> Variant:
        """The variant the next call will use (end-to-end uploads its inputs first)."""
        return self.variants[(self.turn + 1) % len(self.variants)]

    def call(self, op: Callable[[Variant], Any]) -> Any:
        """Run `op` on the next variant and remember its output there."""
        self.turn = (self.turn + 1) % len(self.variants)
        variant = self.variants[self.turn]
        variant.last = op(variant)
        return variant.last

    def check(self) -> Check:
        """Every variant's last output against its reference: the worst one decides."""
        checks = [self.judge(v.last, v) for v in self.variants if v.last is not None]
        if not checks:
            return Check(False, float("inf"), 0.0, "no timed call produced an output")
        failed = [c for c in checks if not c.passed]
        return max(failed or checks, key=lambda c: (c.max_rel_error if c.max_rel_error == c.max_rel_error
                                                     else float("inf")))

    def poison(self, fill: Callable[[Any], bool]) -> None:
        for variant in self.variants:
            for array in (variant.out, variant.last):
                if array is not None:
                    fill(array)

    def refresh(self) -> None:
        """The variant the next call uses gets inputs never seen before (new arrays, new values)."""
        upcoming = (self.turn + 1) % len(self.variants)
        replaced = self.variants[upcoming]
        if replaced.drop:
            replaced.drop()
        self.variants[upcoming] = self._made(self.made)
        self.made += 1
        variant = self.variants[upcoming]
        if self.fill and variant.out is not None:
            self.fill(variant.out)  # its first touch (page faults) is not the call's time either
        if self.settle:
            self.settle(variant.inputs)  # an asynchronous upload is not the call's time

    def prepared(self, backend, **fields: Any) -> "Prepared":
        """The Prepared of a rotating workload: its compute op, check, poison and refresh wired in."""
        self.settle, self.fill = backend.wait_for, backend.fill_nan
        op = fields.pop("op")
        return Prepared(compute=lambda: self.call(op), check_output=lambda _: self.check(),
                        poison=lambda: self.poison(backend.fill_nan), refresh=self.refresh,
                        release=self.release, variants=len(self.variants), **fields)

    def release(self) -> None:
        for variant in self.variants:
            if variant.drop:
                variant.drop()
        self.variants.clear()
