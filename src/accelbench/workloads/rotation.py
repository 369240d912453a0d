"""Input sets used in turn by the timed calls, so the check can cover the work that was timed.

Each input set (a "variant") has its own inputs on the device, its own output buffer and its own
float64 reference. Successive calls never see the same inputs, so a backend that returns the
result of the previous call, or skips a call whose inputs look unchanged, gives a wrong output
for one of them; `poison` fills the buffers with NaN so an output that was never written shows;
`refresh` replaces the next variant with values never seen before, so a cache keyed on the
inputs misses and the call must do the work (runner/audit.py times that call).

The check never announces itself: buffers are poisoned through their framework
(backends/raw_access.py), not the backend's fill_nan; besides each variant's last output, a few
calls since the last poison are kept, drawn by a generator the backend never sees, and any of
them may be judged. An output must also be of its inputs' dtype, and must not share memory with
the host arrays it was made from (a "transfer" that moved nothing).
"""
from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from accelbench.backends import raw_access, raw_values
from accelbench.results import Check
from accelbench.workloads import output_facts, sampled_check
from accelbench.workloads.base import Prepared
from accelbench.workloads.sampled_check import Expectation

VARIANTS = 2
SEED_STRIDE = 7919  # variant k draws its inputs from seed + k * SEED_STRIDE
KEPT = 3            # calls since the last poison kept for the check (reservoir sample)
_PRIVATE = random.SystemRandom()  # which calls are kept: nothing the backend can seed or observe
# before each block, this many elements of each input (drawn) change sign: exact in every float dtype,
# and cheap. Changing every value (a pass over the inputs) left their cache lines dirty: the block's
# first call paid their write-back (STREAM triad 2^23 float64 on one thread: 17.1 ms against 11.6 ms)
CHANGED = 64
NEW_OBJECT_SHARE = 0.125   # an input of at most NEW_OBJECT_MAX_BYTES comes as a new array object this often
NEW_OBJECT_MAX_BYTES = 4 << 20  # (a larger copy would leave its lines dirty for the call, as above)
FULL_POISON_SHARE = 0.125  # an output of at most that size is poisoned whole this often, else scattered


@dataclass(eq=False)  # compared by identity: a refreshed variant is another one
class Variant:
    inputs: list[Any]                 # on the device
    reference: Any                    # float64, what the output must be (None where an Expectation says it)
    out: Any = None                   # an output buffer on the device, where the op writes into one
    last: Any = None                  # what the last call on this variant returned
    hosts: list[np.ndarray] = field(default_factory=list)  # the inputs' host values (for transfers)
    key: int = 0                      # which variant this is: 0, 1, ... (refreshed ones count on)
    #: frees what the variant holds outside its own fields (a kernel runner's buffers), once replaced
    drop: Callable[[], None] | None = None
    #: the host values the expected outputs are computed from (never written; default: `hosts`)
    base: list[np.ndarray] | None = None
    #: per input, the positions each change flipped the sign of, in order (their parity is the state)
    flip_log: list[list[np.ndarray]] = field(default_factory=list)
    #: per input, the positions changed before the current block (the check judges what they feed)
    changed: list[np.ndarray] = field(default_factory=list)
    _flipped: Any = field(default=None, repr=False)      # flipped()'s answers: input -> (the log it read, them)
    calls: int = 0          # calls made on this input set
    judged_calls: int = 0   # ... of which the last was judged (its output judged once only)
    #: the timed call reads `hosts` (a host-to-device copy), not `inputs`: those are what change
    reads_hosts: bool = False

    def upload(self, place: Callable[[np.ndarray], Any]) -> Any:
        """New device inputs placed from the host values (a timed to_device); the old ones are let go
        first, so a transfer holds one input set at a time (two 64 MiB STREAM inputs held beside
        their replacements were the quick suite's peak). Returns the last one placed."""
        self.inputs = []
        self.inputs = [place(h) for h in self.hosts]
        return self.inputs[-1]

    @property
    def bases(self) -> list[np.ndarray]:
        return self.base if self.base is not None else self.hosts

    @property
    def changeable(self) -> list[Any]:
        return self.hosts if self.reads_hosts else self.inputs

    def flipped(self, index: int) -> np.ndarray:
        """The positions of input `index` whose sign is now flipped (changed an odd number of times),
        sorted; worked out once for each length of its log."""
        log = self.flip_log[index] if index < len(self.flip_log) else []
        if not log:
            return np.empty(0, dtype=np.int64)
        key = (len(log), id(log[-1]))
        if self._flipped is None:
            self._flipped = {}
        if self._flipped.get(index, (None,))[0] != key:
            positions, counts = np.unique(np.concatenate(log), return_counts=True)
            self._flipped[index] = (key, positions[counts % 2 == 1])
        return self._flipped[index][1]

    def signs(self, index: int, flat: np.ndarray) -> np.ndarray:
        """±1 at flat positions of input `index`: its values are `base` times these."""
        flipped = self.flipped(index)
        if not flipped.size:
            return np.ones(len(flat))
        found = np.searchsorted(flipped, flat)
        hit = flipped[np.minimum(found, flipped.size - 1)] == flat
        return np.where(hit, -1.0, 1.0)

    def as_now(self) -> "Variant":
        """A copy that keeps the values the inputs hold now, whatever changes follow (for a judgement
        made later): the logs are copied, the arrays shared."""
        # its outputs are not kept: a judgement reads only the inputs' state, and an output per kept
        # copy held a 64 MiB host-to-device copy each until the judging (1.9 GB resident)
        return dataclasses.replace(self, flip_log=[list(log) for log in self.flip_log], changed=list(self.changed),
                                   _flipped=None, last=None, out=None, inputs=[], drop=None)

    def values(self, index: int, flat: np.ndarray) -> np.ndarray:
        """float64 values input `index` now holds at flat positions."""
        base = np.asarray(self.bases[index]).reshape(-1)
        return np.asarray(base[flat], dtype=np.float64) * self.signs(index, flat)


class Rotation:
    """`make(index)` builds variant `index` (0, 1, ... and higher for refreshed ones)."""

    def __init__(self, make: Callable[[int], Variant], judge: Callable[[Any, Variant], Check] | None = None,
                 count: int = VARIANTS, typed: bool = False, expect: Expectation | None = None,
                 device: str = "", upload: Callable[[np.ndarray], Any] | None = None) -> None:
        """`typed`: the output must be of its first input's dtype (the core workloads). `expect`: the
        outputs are judged by sampled elements (workloads/sampled_check.py) and every timed block gets
        changed input values (`before_block`); `upload` places host values on `device` where an input's
        framework cannot scale it (default: the backend's from_host)."""
        self.make, self.judge, self.typed = make, judge, typed
        self.expect, self.device, self.upload = expect, device, upload
        self.marked: dict[int, np.ndarray] = {}    # id(output buffer) -> flat positions the poison marked
        self.variants = [self._made(k) for k in range(count)]
        self.turn = -1
        self.made = count
        self.settle: Callable[[Any], None] | None = None
        self.fill: Callable[[Any], bool] | None = None
        self.backend: Any = None
        self.kept: list[tuple[Any, Variant]] = []   # (output, its variant), a random few
        self.since_poison = 0                       # calls since the last poison
        self.touched: set[int] = set()              # keys of the variants called since then
        self.poisons = _PRIVATE.randrange(2)        # poisons so far, from a random start: even ones scatter

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
        variant.calls += 1
        self._keep(variant.last, variant)
        return variant.last

    def wake(self, op: Callable[[Variant], Any]) -> None:
        """`op` once more on the variant the last call used (inputs already seen), kept nowhere: its
        thread pool is awake for the timed call that follows, as in a measurement's blocks."""
        op(self.current)

    def _keep(self, output: Any, variant: Variant) -> None:
        """Reservoir sampling: each call since the poison is kept with the same chance."""
        self.since_poison += 1
        self.touched.add(variant.key)
        if len(self.kept) < KEPT:
            self.kept.append((output, variant))
        elif (slot := _PRIVATE.randrange(self.since_poison)) < KEPT:
            self.kept[slot] = (output, variant)

    def _judged_outputs(self) -> list[tuple[Any, Variant]]:
        """The last output of every variant called since the poison (with an expectation: of every
        variant whose last call is not judged yet, so a block of one call judges the other input set's
        output from the block before too), and the kept calls: each once."""
        if self.expect is not None:
            judged = [(v.last, v) for v in self.variants if v.last is not None and v.calls > v.judged_calls]
            for _, variant in judged:
                variant.judged_calls = variant.calls
        else:
            judged = [(v.last, v) for v in self.variants if v.last is not None and
                      (not self.touched or v.key in self.touched)]
        judged += [(out, v) for out, v in self.kept if v in self.variants and out is not None]
        return list({(id(out), v.key): (out, v) for out, v in judged}.values())

    def check(self) -> Check:
        """The outputs since the poison judged now: the worst decides."""
        return self.judge_snapshot(self.snapshot())

    def snapshot(self) -> list[tuple[Any, ...]]:
        """What judging the block's outputs needs, taken right after it: with an expectation, the
        judged elements read and the inputs' state kept (cheap; `judge_snapshot` computes the rest
        later, so its temporaries do not evict the next block's data); else the outputs themselves."""
        taken: list[tuple[Any, ...]] = []
        for output, variant in self._judged_outputs():
            problem = (output_facts.dtype_problem(output, variant.inputs) if self.typed else None) or self._aliasing(output, variant)
            if self.expect is None:
                assert self.judge is not None, "a Rotation needs a judge or an expectation"
                taken.append((self.judge(output, variant), problem))
                continue
            read = self.backend.to_host if self.backend is not None else None
            location = self.backend.location if self.backend is not None else (lambda _: self.device)
            reading = sampled_check.read(output, variant, self.expect, self.marked.get(id(output)), _PRIVATE,
                                         location, read)
            taken.append((reading, variant.as_now(), problem))
        return taken

    def judge_snapshot(self, taken: object) -> Check:
        """The snapshot's outputs against their expected values: the first failure, else the worst."""
        checks = []
        for entry in taken if isinstance(taken, list) else []:
            if self.expect is None:
                check, problem = entry
            else:
                reading, variant, problem = entry
                check = sampled_check.judged(reading, variant, self.expect, self.device)
            if problem:
                check = Check(False, float("inf"), check.tolerance, f"{problem}; {check.detail}", check.device_seen)
            checks.append(check)
        if not checks:
            return Check(False, float("inf"), 0.0, "no timed call produced an output")
        failed = [c for c in checks if not c.passed]
        return max(failed or checks, key=lambda c: (c.max_rel_error if c.max_rel_error == c.max_rel_error
                                                     else float("inf")))

    def _aliasing(self, output: Any, variant: Variant) -> str | None:
        """An output that is its host input's memory (nothing was moved or computed into it), or one of
        its device inputs' (a "copy" that hands back a view of what it read)."""
        if self.expect is not None and any(raw_values.shares_memory(output, i) for i in variant.inputs):
            return "the output shares memory with an input of the call: nothing was computed into it"
        for host in variant.hosts:
            if isinstance(output, (np.ndarray, np.generic)):
                if np.may_share_memory(output, host):
                    return "the output is the host input's own memory: no data was moved"
                continue
            if self.backend is None or not raw_access.known(output) or not host.size:
                continue
            saved = host.flat[0]
            marker = output_facts.marker(saved)
            try:
                host.flat[0] = marker  # changed on the host alone ...
                seen = np.asarray(self.backend.to_host(raw_access.first_element(output))).reshape(-1)[:1]
            finally:
                host.flat[0] = saved
            if seen.size and output_facts.same(seen[0], marker):  # ... and seen on the device
                return "the output follows its host input's memory: no data was moved"
        return None

    def poison(self, fill: Callable[[Any], bool]) -> None:
        """NaN into every output buffer: all of it, or (every other poison, from a random start) a
        few elements in a thousand drawn at random, which a backend sampling its buffers for the
        poison cannot find, and a call that rewrites a part of its output leaves standing."""
        self.poisons += 1
        scattered = self.poisons % 2 == 0
        for variant in self.variants:
            for array in (variant.out, variant.last):
                if array is None or (scattered and raw_access.poison_scattered(array, _draw)):
                    continue
                if not raw_access.poison(array):
                    fill(array)  # a type accelbench cannot write: only the backend can (its placement is unverified)
        self.kept, self.since_poison, self.touched = [], 0, set()

    def before_block(self, calls: int) -> None:
        """Before every timed block alike (runner/block_audit.py): the input sets the block's calls
        will use get new values, by an exact factor, in place or in new array objects (a drawn share),
        and their output buffers are poisoned through the framework: a few scattered elements, or (a
        drawn share) all of them. Nothing falls back to the backend's own fill: an output its
        framework cannot write is judged by its values alone, which the new inputs make differ from
        the last block's everywhere."""
        count = len(self.variants)
        used = {(self.turn + 1 + step) % count for step in range(max(1, min(calls, count)))}
        self.marked = {}
        for index in sorted(used):
            variant = self.variants[index]
            self._change(variant)
            for array in {id(a): a for a in (variant.out, variant.last) if a is not None}.values():
                self._poison_one(array)
        self.kept, self.since_poison, self.touched = [], 0, set()

    def _poison_one(self, array: Any) -> None:
        small = (raw_values.element_count(array) or 0) * raw_values.itemsize(array) <= NEW_OBJECT_MAX_BYTES
        if small and _PRIVATE.random() < FULL_POISON_SHARE and raw_access.poison(array):
            return
        drawn: list[np.ndarray] = []

        def draw(size: int, count: int) -> np.ndarray:
            drawn.append(_draw(size, count))
            return drawn[-1]
        if raw_access.poison_scattered(array, draw) and drawn:
            self.marked[id(array)] = drawn[-1]  # flat positions, as the check reads them

    def _change(self, variant: Variant) -> None:
        """CHANGED drawn elements of every input of `variant` change sign, through the framework, in
        place (or, for a small input, a drawn share of the time, in a new array object): exact, and
        every output that reads them differs from the last block's."""
        arrays = variant.changeable
        while len(variant.flip_log) < len(arrays):
            variant.flip_log.append([])
        variant.changed = []
        for index, array in enumerate(arrays):
            size = raw_values.element_count(array) or 0
            where = _draw(size, min(size, CHANGED)) if size else np.empty(0, dtype=np.int64)
            base = variant.bases[index] if index < len(variant.bases) else None
            aliased = base is not None and not variant.reads_hosts and raw_values.shares_memory(array, base)
            small = size * raw_values.itemsize(array) <= NEW_OBJECT_MAX_BYTES
            fresh = not variant.reads_hosts and small and _PRIVATE.random() < NEW_OBJECT_SHARE
            if aliased or fresh or not raw_values.negate_at(array, where):
                replaced = None if aliased else raw_values.negated_copy(array, where)
                if replaced is None and base is not None:
                    variant.flip_log[index].append(where)
                    replaced = self._uploaded(variant, index, array)  # its values, from base and flips
                    variant.flip_log[index].pop()
                if replaced is None:
                    raise RuntimeError(f"cannot change the values of a {type(array).__name__} input")
                arrays[index] = replaced
            variant.flip_log[index].append(where)
            variant.changed.append(where)

    def _uploaded(self, variant: Variant, index: int, like: Any) -> Any:
        """The input's current values, from its base and flips, uploaded as a new array."""
        base = np.asarray(variant.bases[index])
        values = base * variant.signs(index, np.arange(base.size)).reshape(base.shape).astype(base.dtype)
        if self.upload is not None:
            return self.upload(values)
        if self.backend is None:
            return None
        placed = self.backend.from_host(values, self.device)
        dtype = raw_access.dtype_name(like)
        return self.backend.astype(placed, dtype) if dtype == "bfloat16" else placed

    def refresh(self) -> None:
        """The variant the next call uses gets inputs never seen before (new arrays, new values)."""
        upcoming = (self.turn + 1) % len(self.variants)
        replaced = self.variants.pop(upcoming)  # let it go before the new one is made: two input
        if replaced.drop:                        # sets in memory at once, never three
            replaced.drop()
        self.kept = [(out, v) for out, v in self.kept if v is not replaced]  # check() skips them anyway
        del replaced
        with output_facts.one_blas_thread():  # the reference's BLAS must leave no thread spinning beside the fresh call
            self.variants.insert(upcoming, self._made(self.made))
        self.made += 1
        variant = self.variants[upcoming]
        if self.fill and variant.out is not None:
            self.fill(variant.out)  # its first touch (page faults) is not the call's time either
        if self.settle:
            self.settle(variant.inputs)  # an asynchronous upload is not the call's time

    def prepared(self, backend, **fields: Any) -> "Prepared":
        """The Prepared of a rotating workload: its compute op, check, poison and refresh wired in."""
        self.settle, self.fill, self.backend = backend.wait_for, backend.fill_nan, backend
        op = fields.pop("op")
        audited = self.expect is not None
        return Prepared(compute=lambda: self.call(op), check_output=lambda _: self.check(),
                        poison=lambda: self.poison(backend.fill_nan), refresh=self.refresh,
                        wake=lambda: self.wake(op), before_block=self.before_block if audited else None,
                        snapshot_output=(lambda _: self.snapshot()) if audited else None,
                        judge_snapshot=self.judge_snapshot if audited else None,
                        release=self.release, variants=len(self.variants), **fields)

    def release(self) -> None:
        for variant in self.variants:
            if variant.drop:
                variant.drop()
        self.variants.clear()
        self.kept.clear()


def _draw(size: int, count: int) -> np.ndarray:
    """`count` distinct flat indices below `size`, from a generator the backend never sees."""
    return sampled_check.PRIVATE.choice(size, count, replace=False).astype(np.int64)
