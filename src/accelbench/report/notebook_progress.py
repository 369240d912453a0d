"""A run's progress in a Jupyter notebook, without widgets: one line of output updated in place.

IPython's `update_display` replaces the line in a live notebook, and nbclient applies the same
updates when it executes a notebook, so the last state ("accelbench: 12 of 12 measured in 47 s")
stays in the saved notebook and in nbconvert's HTML. Shown for work expected to take over
SHOW_AFTER_S (or once it has); only inside a Jupyter kernel (IPython already imported, a kernel
running): elsewhere it does nothing (the CLI has its own progress bar). IPython is never imported
here unless the user's process already has it.
"""
from __future__ import annotations

import sys
import time
from html import escape
from typing import Any, Callable

from accelbench.report.result_text import clip, spec_text

SHOW_AFTER_S = 2.0
# expected seconds per planned spec, in units of the rigor's budget: compute, transfers and the
# paired rounds of the speed-ups each take part of one
BUDGETS_PER_SPEC = 2.0


def in_kernel() -> bool:
    """Whether this process is a Jupyter kernel (where a display can be updated in place)."""
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython is not None else None
    return shell is not None and getattr(shell, "kernel", None) is not None


class NotebookProgress:
    """`on_start` / `on_done` for runner's execute; `finish` writes the last line."""

    def __init__(self, total: int, budget_s: float, *, show: bool | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.total, self.done, self.skipped = total, 0, 0
        self.current = ""
        self.clock, self.started_s = clock, clock()
        self.enabled = in_kernel() if show is None else show
        self.eager = total * budget_s * BUDGETS_PER_SPEC >= SHOW_AFTER_S
        self.handle: Any = None
        if self.enabled and self.eager:
            self._show()

    def on_start(self, item) -> None:
        self.current = spec_text(item.spec)
        self._show()

    def on_done(self, item, result) -> None:
        self.done += 1
        self.skipped += not hasattr(result, "samples_s")
        self.current = "timing the speed-ups in paired rounds" if self.done == self.total else ""
        self._show()

    def finish(self, interrupted: bool) -> None:
        self.current = ""
        self._show(final="interrupted" if interrupted else "done")

    def text(self, final: str = "") -> str:
        elapsed = f"{self.clock() - self.started_s:.0f} s"
        skipped = f" ({self.skipped} skipped or failed)" if self.skipped else ""
        head = f"accelbench: {self.done} of {self.total} measured{skipped}, {elapsed}"
        if final:
            return f"{head}, {final}" if final == "interrupted" else f"{head}; done"
        return f"{head}; now: {clip(self.current, 120)}" if self.current else head

    def _show(self, final: str = "") -> None:
        if not self.enabled or (self.handle is None and not self.eager
                                and self.clock() - self.started_s < SHOW_AFTER_S):
            return
        text = self.text(final)
        bar = f'<progress value="{self.done}" max="{max(self.total, 1)}" style="width:12em"></progress> '
        data = {"text/plain": text, "text/html": f"<div>{bar}<code>{escape(text)}</code></div>"}
        try:
            from IPython.display import display

            if self.handle is None:
                self.handle = display(data, raw=True, display_id=True)
            else:
                self.handle.update(data, raw=True)
        except Exception:  # noqa: BLE001 - a display that fails must never stop a measurement
            self.enabled = False
