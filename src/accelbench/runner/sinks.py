"""What the runner needs of the store: somewhere each finished result, skip and paired speed-up goes
the moment it is made (store/db.py's Store is one; a test's list is another). The store sits above
the runner, so the runner names only these."""
from __future__ import annotations

from typing import Protocol

from accelbench.results import Measurement, PairedSamples, Skip


class ResultSink(Protocol):
    def add_result(self, run_id: str, m: Measurement) -> object:
        """Keep one finished measurement (committed before returning)."""

    def add_skip(self, run_id: str, s: Skip) -> object:
        """Keep one spec that did not run, with its reason."""


class SpeedupSink(Protocol):
    def add_speedup(self, run_id: str, paired: PairedSamples) -> object:
        """Keep one speed-up's paired rounds (or why it was not paired)."""
