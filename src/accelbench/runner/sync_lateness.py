"""When a timed block's read-back shows synchronize() left work running (runner/block_audit.py).

A block is late where reading its last output back waited beyond LATE_MIN_S, half a call and a
tenth of the block; the audit refuses a sync late in most counted blocks, or in every block up to
some number of queued calls (`late_up_to`).
"""
from __future__ import annotations

from typing import Callable, Protocol, Sequence, TypeVar


class _Block(Protocol):
    calls: int


B = TypeVar("B", bound=_Block)

# a read-back that waited this long beyond its own cost, and ... (the first read after a block costs
# more than the next on CPU frameworks whatever the sync does: torch n=64, 20 µs against 7 µs; a
# first host view of a new jax array, torch waking its pool: 90-110 µs)
LATE_MIN_S = 150e-6
LATE_CALL_SHARE = 0.5             # ... over half a call's time, and ...
# ... over a tenth of the block (less inflates a rate under 10%; PoCL's first read after a kernel costs ~350 µs)
LATE_BLOCK_SHARE = 0.1
LATE_BLOCKS_SHARE = 0.8           # late in this share of the blocks: synchronize() does not wait
LATE_MIN_BLOCKS = 10
# late in every one of at least this many blocks of up to some length: a sync that waits only when
# more calls are queued (a random share f of late blocks passes with f^8: 26% late, PoCL's read-backs
# on a busy machine, 2e-5, where 5 blocks of one length gave an honest refusal in 3 runs)
LATE_FEW_CALLS_BLOCKS = 8


def late_up_to(blocks: Sequence[B], is_late: Callable[[B], bool]) -> tuple[int, int] | None:
    """(the longest length d, how many blocks) where every block of d calls or fewer was late, and at
    least LATE_FEW_CALLS_BLOCKS of them ran; None where no such prefix of lengths exists."""
    found = None
    shortest_first = sorted(blocks, key=lambda b: b.calls)
    for index, block in enumerate(shortest_first):
        if not is_late(block):
            break
        following = shortest_first[index + 1] if index + 1 < len(shortest_first) else None
        if index + 1 >= LATE_FEW_CALLS_BLOCKS and (following is None or following.calls > block.calls):
            found = (block.calls, index + 1)
    return found
