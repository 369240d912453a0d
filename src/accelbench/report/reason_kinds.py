"""A verdict reason's kind in a few words, for counts ("waited for a CPU (3)"): each reads as a
phrase of its own, never a reason cut after its third word ("95% CI of")."""
from __future__ import annotations

import re

from accelbench import verdict as v

# a reason's kind (accelbench.verdict) as the answer counts it
PHRASES: dict[str, str] = {
    v.CPU_WAIT: "our threads waited for a CPU", v.OWN_THREADS: "our own threads oversubscribed the cores",
    v.HYPERVISOR: "the hypervisor took CPU time", v.OTHER_PROCESSES: "other processes ran alongside",
    v.DEVICE_SHARED: "other processes ran alongside", v.THREADS_CLAIM: "fewer cores used than claimed",
    v.THREADS_BEYOND: "more cores used than claimed",
    v.DEVICE_SLOWED: "the device slowed its clocks", v.TARGET: "the interval missed its target",
    v.UNSTABLE: "unstable timings", v.DRIFT: "drift", v.BURSTS: "bursts of slow samples",
    v.WARMUP: "warm-up incomplete", v.STATE_CHANGED: "a reading changed during the measurement",
    v.PHASES: "phases that do not add up", v.CHECK_FAILED: "wrong output",
    v.BEYOND_PEAK: "a rate beyond the device's peak", v.NO_TIME: "no time measured",
    v.REFUSED: "a synchronisation that does not wait", v.SYNC_FAILED: "a synchronisation that does not wait",
    v.SYNC_UNPROVEN: "synchronisation not proven", v.CACHED: "signs of cached or skipped work",
    v.WRONG_DEVICE: "output on another device", v.PLACEMENT_CLAIMED: "placement not observed",
    v.PLACEMENT_UNOBSERVED: "placement not observed", v.CHECKED_APART: "checked apart from the timed calls",
    v.READ_BACK: "timed calls that did not all finish", v.UNCHECKED: "no reference to check against",
}
# results stored before kinds: their reasons' texts, read by pattern
# (pattern found in the reason, its kind): the first match wins, so the specific come first
KINDS: tuple[tuple[str, str], ...] = (
    (r"^our threads waited for a CPU", "our threads waited for a CPU"),
    (r"^our own threads oversubscribed", "our own threads oversubscribed the cores"),
    (r"^the hypervisor took", "the hypervisor took CPU time"),
    (r"^other processes used|^\d+ other process(es)? used", "other processes ran alongside"),
    (r"^claims \d+ threads", "fewer cores used than claimed"),
    (r"slowed its clocks", "the device slowed its clocks"),
    (r"interval missed its target|95% CI", "the interval missed its target"),
    (r"^unstable", "unstable timings"),
    (r"phases do not add up", "phases that do not add up"),
    (r"^check failed", "wrong output"),
    (r"faster than this device can compute", "a rate beyond the device's peak"),
    (r"no time was measured", "no time measured"),
    (r"refused for timing", "a synchronisation that does not wait"),
    (r"identical results|cache results", "signs of cached or skipped work"),
    (r"output lives on", "output on another device"),
    (r"placement claimed", "placement not observed"),
    (r"checked on a call of its own", "checked apart from the timed calls"),
    (r"read back", "timed calls that did not all finish"),
)
_PHASE = re.compile(r"^(to_device|to_host|end_to_end|compute): ")
_SHORT = 40  # a reason's head up to this long is a kind by itself ("unstable", "drift")


def reason_kind(reason: str) -> str:
    """A reason's phrase, from its kind (accelbench.verdict.Caveat). A reason stored before kinds:
    'our threads waited for a CPU 37% of the time …' -> 'our threads waited for a CPU'; of no known
    pattern: its head before ':' or ';' when short, else 'other reasons'."""
    phrase = PHRASES.get(v.kind_of(reason))
    if phrase:
        return phrase
    text = _PHASE.sub("", reason.strip())
    for pattern, kind in KINDS:
        if re.search(pattern, text):
            return kind
    head = re.split(r"[:;]", text, maxsplit=1)[0].strip()
    return head if head and len(head) <= _SHORT else "other reasons"
