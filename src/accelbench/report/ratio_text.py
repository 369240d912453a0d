"""One way to say a speed-up, in the terminal, the report and --json: "3.17× slower", never "0.32×".

A speed-up r (baseline time / this time) reads one way whatever its verdict: "r× faster" where r ≥ 1,
"(1/r)× slower" where r < 1, so no figure below 1 is ever shown. Its interval is said in the same
direction ("3.17× slower [3.00–3.30]"), or, where it straddles 1, by its two ends in words ("between
1.17× faster and 1.45× slower"). An interval whose ends lie more than MEASURABLE_SPAN apart is no
figure: a decided one says the bound it is sure of ("at least 2.37× slower"), an undecided one "not
measurable here", with why and what would help. Core module: no heavy import.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MEASURABLE_SPAN = 2.0  # an interval's high end over its low end beyond this is no figure
HELP = "a quieter machine, or --rigor standard (more rounds) would narrow it"


@dataclass(frozen=True)
class Oriented:
    """A speed-up as it is said: `value` ≥ 1 with its direction ("faster" or "slower"), its interval
    in that direction (`low` ≤ `high`, both ≥ 1 where the interval does not straddle 1), and the
    verdict word ("faster" | "slower" | "same" | "inconclusive" | "contaminated")."""

    value: float
    low: float
    high: float
    word: str
    direction: str = "faster"

    @property
    def directed(self) -> bool:
        return self.word in ("faster", "slower")


def oriented(ratio: Any) -> Oriented:
    """`ratio` (a stats.RatioCI or SpeedupCI) in the convention above."""
    word = ratio.verdict()
    if ratio.ratio < 1:  # said as slower, decided or not
        return Oriented(_inverse(ratio.ratio), _inverse(ratio.high), _inverse(ratio.low), word, "slower")
    return Oriented(ratio.ratio, ratio.low, ratio.high, word, "faster")


def _inverse(value: float) -> float:
    return 1 / value if value else float("inf")


def span(ratio: Any) -> float:
    """How many times its interval's high end exceeds its low end (inf where unbounded)."""
    if not (ratio.low > 0 and math.isfinite(ratio.high) and math.isfinite(ratio.low)):
        return float("inf")
    return ratio.high / ratio.low


def measurable(ratio: Any) -> bool:
    return span(ratio) <= MEASURABLE_SPAN


def number(value: float) -> str:
    """Two or three significant figures: 3.10, 31.0, 310 (the ratios said are never below 1)."""
    if value != value or value in (float("inf"), float("-inf")):
        return "∞" if value > 0 else "—"
    if abs(value) < 1:
        return f"{value:#.2g}"  # a share, not a ratio: 0.95, 0.20, 0.0041
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def signed(value: float) -> str:
    """One ratio as a speed-up in words: '1.45× slower' for 0.69, '1.17× faster' for 1.17."""
    if value < 1:
        return f"{number(_inverse(value))}× slower"
    return f"{number(value)}× faster"


def _straddle(ratio: Any) -> str:
    return f"between {signed(ratio.high)} and {signed(ratio.low)}" if ratio.ratio < 1 else \
        f"between {signed(ratio.low)} and {signed(ratio.high)}"


# what a speed-up said in words is (Said.kind): what the cells and sentences built on it read
FIGURE, AT_LEAST, SAME, UNMEASURABLE, NO_CLEAR_DIFFERENCE = "figure", "at_least", "same", "unmeasurable", "no_clear"
UNDECIDED_CONTAMINATED, UNDECIDED_LOAD = "undecided_contaminated", "undecided_load"


@dataclass(frozen=True)
class Said:
    """A speed-up in words: `head` (the figure or the verdict), `detail` (its interval, or why none),
    both free of any ratio below 1; `kind` says which (FIGURE: `detail` is its interval)."""

    head: str
    detail: str
    measurable: bool
    kind: str

    def line(self) -> str:
        return f"{self.head} {self.detail}".strip() if self.kind == FIGURE else \
            (f"{self.head} ({self.detail})" if self.detail else self.head)


def said(ratio: Any) -> Said:
    o, wide = oriented(ratio), not measurable(ratio)
    rough = f"≈{signed(ratio.ratio)}"
    if o.word == "contaminated":
        return Said("not decided", f"{rough}, contaminated: the paired rounds disagree with the medians", not wide,
                    UNDECIDED_CONTAMINATED)
    if getattr(ratio, "withheld", False):  # an unpaired ratio a side's load could have made (runner/load_bias.py)
        return Said("not decided", f"{rough}, a side slowed by load", not wide, UNDECIDED_LOAD)
    if o.directed:
        if wide:  # the direction is sure, the size is not: say the bound it is sure of
            return Said(f"at least {number(o.low)}× {o.word}",
                        f"not measurable more closely here: its interval, {number(o.low)}–{number(o.high)}×, "
                        f"spans {span(ratio):.1f}-fold; {HELP}", False, AT_LEAST)
        return Said(f"{number(o.value)}× {o.word}", f"[{number(o.low)}–{number(o.high)}]", True, FIGURE)
    if o.word == "same":
        return Said("same speed", f"within ±{_within(ratio):.0%}", True, SAME)
    if wide:
        return Said("not measurable here", f"its interval spans {_fold(ratio)}; {HELP}", False, UNMEASURABLE)
    return Said("no clear difference", _straddle(ratio), True, NO_CLEAR_DIFFERENCE)


def _fold(ratio: Any) -> str:
    width = span(ratio)
    return "without bound" if not math.isfinite(width) else f"{width:,.0f}-fold" if width >= 10 else f"{width:.1f}-fold"


def phrase(ratio: Any) -> str:
    """'3.10× faster [2.90–3.30]', '3.17× slower [3.00–3.30]', 'same speed (within ±2%)', 'no clear
    difference (between 1.17× faster and 1.45× slower)', 'at least 2.37× slower (...)', 'not
    measurable here (...)' or 'not decided (≈1.11× slower, ...)'."""
    return said(ratio).line()


def cell(ratio: Any) -> tuple[str, str]:
    """Two short lines for a table cell: the figure or verdict, and its interval (or why none)."""
    s, o = said(ratio), oriented(ratio)
    if s.measurable and o.directed:
        return s.head, s.detail
    if s.kind == AT_LEAST:
        return f"≥{number(o.low)}× {o.word}", f"spread {_fold(ratio)}"
    if s.kind == UNMEASURABLE:
        return "not measurable", f"spread {_fold(ratio)}"
    if s.kind in (UNDECIDED_LOAD, UNDECIDED_CONTAMINATED):
        return "not decided", f"≈{signed(ratio.ratio)}" + (", load" if s.kind == UNDECIDED_LOAD else ", contaminated")
    if s.kind == NO_CLEAR_DIFFERENCE:
        return "no clear diff.", f"within ±{_within(ratio):.0%}"
    return s.head, s.detail


def cell_is_figure(ratio: Any) -> bool:
    """Whether cell(ratio) is a figure over its interval (not a verdict or a reason)."""
    return said(ratio).measurable and oriented(ratio).directed


def _within(ratio: Any) -> float:
    """The largest change either end of the interval allows, as a share: 1.45× slower is 45%."""
    return max(ratio.high - 1, 1 / ratio.low - 1 if ratio.low > 0 else math.inf, 1 - ratio.low, 0.0)


def inverted(ratio: Any) -> Any:
    """The same comparison seen from its other side: the ratio, its interval and any reference
    inverted, the sides a load moved swapped (a dataclass copy; its kind of object kept)."""
    import dataclasses

    def inverse(value: float | None) -> float | None:
        return None if value is None else _inverse(value)

    changes: dict[str, Any] = {"ratio": _inverse(ratio.ratio), "low": _inverse(ratio.high), "high": _inverse(ratio.low)}
    if getattr(ratio, "reference", None) is not None:
        changes["reference"] = inverse(ratio.reference)
    if getattr(ratio, "moved_sides", None):
        swap = {"baseline": "candidate", "candidate": "baseline"}
        changes["moved_sides"] = frozenset(swap.get(side, side) for side in ratio.moved_sides)
    return dataclasses.replace(ratio, **changes)


def compared(ratio: Any, who: str, whom: str) -> str:
    """`who` against `whom` in words, `ratio` being whom's time over who's: 'float32 is 2.84× faster
    [2.10–3.30] than float64', 'float32 runs at the speed of float64 (within ±2%)', 'float32 and
    float64 cannot be told apart (between …)', 'float32 against float64: not measurable here (…)'."""
    s = said(ratio)
    if s.kind in (UNDECIDED_LOAD, UNDECIDED_CONTAMINATED, UNMEASURABLE):
        return f"{who} against {whom}: {s.line()}"
    if s.kind == SAME:
        return f"{who} runs at the speed of {whom} ({s.detail})"
    if s.kind == NO_CLEAR_DIFFERENCE:
        return f"{who} and {whom} cannot be told apart ({s.detail})"
    if s.kind == FIGURE:
        return f"{who} is {s.head} {s.detail} than {whom}"
    return f"{who} is {s.head} than {whom} ({s.detail})"
