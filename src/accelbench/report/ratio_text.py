"""One way to say a speed-up, in the terminal, the report and --json: "3.17× slower", never "0.32× slower".

A speed-up r (baseline time / this time) is said as "r× faster" when its interval lies above 1 and as
"(1/r)× slower", its interval inverted, when below; an interval around 1 decides nothing, so it
keeps the plain ratio and no direction word. Core module: no heavy import.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Oriented:
    """A speed-up as it is said: `value` ≥ 1 with its word, or the plain ratio without one."""

    value: float
    low: float
    high: float
    word: str      # "faster" | "slower" | "same" | "inconclusive" | "contaminated" (verdict words)

    @property
    def directed(self) -> bool:
        return self.word in ("faster", "slower")


def oriented(ratio: Any) -> Oriented:
    """`ratio` (a stats.RatioCI or SpeedupCI) in the convention above."""
    word = ratio.verdict()
    if word == "slower":
        return Oriented(_inverse(ratio.ratio), _inverse(ratio.high), _inverse(ratio.low), word)
    return Oriented(ratio.ratio, ratio.low, ratio.high, word)


def _inverse(value: float) -> float:
    return 1 / value if value else float("inf")


def number(value: float) -> str:
    """Two or three significant figures: 0.95, 3.10, 31.0, 310."""
    if value != value or value in (float("inf"), float("-inf")):
        return "∞" if value > 0 else "—"
    if abs(value) < 1:
        return f"{value:#.2g}"  # 0.95, 0.20, 0.0041: a tiny ratio is not 0.00
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}" if abs(value) >= 10 else f"{value:.2f}"


def phrase(ratio: Any) -> str:
    """'3.10× faster [2.90–3.30]', '3.17× slower [3.00–3.30]', 'same speed (0.99× [0.97–1.02])',
    'no clear difference (0.98× [0.90–1.07])' or 'contaminated (0.44× [0.26–0.88])'."""
    o = oriented(ratio)
    interval = f"[{number(o.low)}–{number(o.high)}]"
    if o.directed:
        return f"{number(o.value)}× {o.word} {interval}"
    if getattr(ratio, "withheld", False):  # an unpaired ratio a side's load could have made (runner/load_bias.py)
        return f"not decided, a side slowed by load ({number(o.value)}× {interval})"
    label = {"same": "same speed", "contaminated": "not decided, contaminated"}.get(o.word, "no clear difference")
    return f"{label} ({number(o.value)}× {interval})"
