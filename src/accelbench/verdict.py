"""Every measurement ends with a verdict a user can see: what it is worth, and why.

- `invalid`: the timed work's output was wrong, the rate is beyond what the device can do,
  synchronisation did not wait, or the output did not live where it was asked to: counts nowhere.
- `noisy`: valid, but disturbed (a busy machine, phases that disagree, a missed target): shown,
  never a ceiling and never the basis of a faster/slower verdict.
- `unverified`: no reference to check against (a user function without one): shown, never a ceiling.
- `valid`: everything above held.

Every warning and every verdict reason is a `Caveat`: the text a user reads, with a `kind` (what
verdicts, advice and the answer decide on, never the words) and its `figures`. Kinds are stored with
the results (`caveats_to_json`); results stored before kinds existed read back with kind "".
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Mapping

VALID, NOISY, UNVERIFIED, INVALID = "valid", "noisy", "unverified", "invalid"
VERDICTS = (VALID, NOISY, UNVERIFIED, INVALID)  # least to most severe
_SEVERITY = {name: rank for rank, name in enumerate(VERDICTS)}


# -- kinds: the harness's warnings (timing/harness.py, timing/bursts.py) ----------------------------
WARMUP, TARGET, UNSTABLE, DRIFT, BURSTS = "warmup", "target", "unstable", "drift", "bursts"
STATE_CHANGED, STATE_UNREAD, RESOLUTION, OVERHEAD = "state_changed", "state_unread", "resolution", "overhead"
# the harness's warnings that make a result noisy (a missed target, unstable, drift, warm-up, a state change)
DISTURBING = frozenset({WARMUP, TARGET, UNSTABLE, DRIFT, BURSTS, STATE_CHANGED})
SETTLED_LATE = "settled_late"  # first samples were still warm-up (timing/steady_state.py): left out, not disturbing
METHOD_NOTES = frozenset({SETTLED_LATE})  # how a number was taken, not a doubt: --json and the report, not the terminal's list
REMEASURED = "remeasured"   # the runner timed it twice: the first attempt was disturbed (not itself disturbing)
# -- the contention monitor (timing/contention.py, timing/device_slowdowns.py) ------------------------
OWN_THREADS, CPU_WAIT, HYPERVISOR, OTHER_PROCESSES = "own_threads", "cpu_wait", "hypervisor", "other_processes"
DEVICE_SHARED, DEVICE_SLOWED = "device_shared", "device_slowed"
# -- the runner's checks (runner/execute.py, audit.py, plausibility.py) -------------------------------
THREADS_CLAIM, NOT_COUNTED, REFUSED, PHASES = "threads_claim", "not_counted", "refused", "phases"
THREADS_BEYOND = "threads_beyond"   # more cores used than claimed (THREADS_CLAIM: fewer)
CHECK_FAILED, CHECKED_APART, UNCHECKED, CACHED = "check_failed", "checked_apart", "unchecked", "cached"
SYNC_UNTESTED, SYNC_UNPROVEN, SYNC_FAILED, READ_BACK = "sync_untested", "sync_unproven", "sync_failed", "read_back"
NO_TIME, BEYOND_PEAK, RATE_UNBOUNDED = "no_time", "beyond_peak", "rate_unbounded"
PLACEMENT_UNOBSERVED, PLACEMENT_CLAIMED, WRONG_DEVICE = "placement_unobserved", "placement_claimed", "wrong_device"
# -- the device probes (devices/nvidia.py, amd.py) ---------------------------------------------------
HIDDEN = "hidden"   # figures: {"setting": "CUDA_VISIBLE_DEVICES='1'"}


class Caveat(str):
    """A warning or a verdict reason: the text a user reads (it is that `str`: printed, joined and
    compared as before), its `kind` (what anything deciding reads) and its `figures` (the numbers
    in the text). A plain `str` in its place has kind "" (a result stored before kinds)."""

    kind: str
    figures: dict[str, Any]

    def __new__(cls, text: str, kind: str = "", figures: Mapping[str, Any] | None = None) -> "Caveat":
        made = super().__new__(cls, text)
        made.kind, made.figures = kind or kind_of(text), dict(figures or getattr(text, "figures", {}))
        return made

    def __repr__(self) -> str:
        return f"Caveat({str(self)!r}, kind={self.kind!r})"

    def in_phase(self, phase: str) -> "Caveat":
        """The same caveat about one phase other than compute: "to_device: …", figures["phase"]."""
        return Caveat(f"{phase}: {self}", self.kind, {**self.figures, "phase": phase})

    @property
    def phase(self) -> str:
        return str(self.figures.get("phase", "compute"))


def kind_of(text: str) -> str:
    """A warning's or reason's kind; "" for a plain string (stored before kinds existed)."""
    return getattr(text, "kind", "")


def caveats_to_json(caveats: Iterable[str]) -> list[Any]:
    """As stored and exported: a caveat with a kind is {"text", "kind"[, "figures"]}, else its text."""
    out: list[Any] = []
    for caveat in caveats:
        kind, figures = kind_of(caveat), getattr(caveat, "figures", None)
        entry: dict[str, Any] = {"text": str(caveat), "kind": kind}
        if figures:
            entry["figures"] = dict(figures)
        out.append(entry if kind else str(caveat))
    return out


# results stored before kinds: the harness's warnings as they began then, read once on loading (as a
# migration would); nothing decides on a text otherwise
_STORED_BEFORE_KINDS = (("unstable: IQR", UNSTABLE), ("drift:", DRIFT), ("bursts:", BURSTS),
                        ("still getting faster", WARMUP), ("95% CI", TARGET))


def caveats_from_json(items: Iterable[Any] | None) -> tuple[str, ...]:
    """What caveats_to_json wrote, and the plain strings of older results (their harness kinds recognised)."""
    out: list[str] = []
    for item in items or ():
        if isinstance(item, dict):
            out.append(Caveat(str(item.get("text", "")), str(item.get("kind") or ""), item.get("figures") or {}))
            continue
        text = str(item)
        kind = next((k for start, k in _STORED_BEFORE_KINDS if text.startswith(start)), "")
        out.append(Caveat(text, kind) if kind else text)
    return tuple(out)


@dataclass(frozen=True)
class VerdictReason:
    """One reason, and the verdict it alone would give; `kind` names its cause (else the reason's own)."""

    status: str
    reason: str
    kind: str = ""
    figures: Mapping[str, Any] | None = None

    @property
    def cause(self) -> Caveat:
        return Caveat(self.reason, self.kind or kind_of(self.reason), self.figures)


@dataclass(frozen=True)
class Verdict:
    status: str = VALID
    reasons: tuple[str, ...] = ()

    @property
    def counts(self) -> bool:
        """Its time may be shown as a rate and a speed-up."""
        return self.status != INVALID

    @property
    def trusted(self) -> bool:
        """It may become a measured ceiling."""
        return self.status == VALID

    def text(self) -> str:
        return self.status + (f": {'; '.join(self.reasons)}" if self.reasons else "")


def severity(status: str) -> int:
    return _SEVERITY.get(status, _SEVERITY[INVALID])


def combine(findings: list[VerdictReason] | tuple[VerdictReason, ...]) -> Verdict:
    """The most severe status among the findings; reasons ordered from the most severe down."""
    if not findings:
        return Verdict()
    ordered = sorted(findings, key=lambda f: -severity(f.status))
    reasons = tuple(dict.fromkeys(f.cause for f in ordered))  # once each (by text), order kept
    return Verdict(ordered[0].status, reasons)
