"""A verdict reason's kind in a few words, for counts ("waited for a CPU (3)"): each reads as a
phrase of its own, never a reason cut after its third word ("95% CI of")."""
from __future__ import annotations

import re

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
    """'our threads waited for a CPU 37% of the time …' -> 'our threads waited for a CPU'; a reason
    of no known kind: its head before ':' or ';' when short, else 'other reasons'."""
    text = _PHASE.sub("", reason.strip())
    for pattern, kind in KINDS:
        if re.search(pattern, text):
            return kind
    head = re.split(r"[:;]", text, maxsplit=1)[0].strip()
    return head if head and len(head) <= _SHORT else "other reasons"
