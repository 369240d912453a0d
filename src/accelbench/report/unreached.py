"""The report's "found, not measured" section: inventory devices that no backend reached in a run.

Runs record the groups with their reasons in the machine record (runner/reach.py). For a run stored
before that, the inventory snapshot still shows which devices got neither a result nor a skip.
"""
from __future__ import annotations

import html

from accelbench.report.data import RunData


def unreached_lines(run: RunData) -> list[str]:
    """One sentence per group of devices of one model that the run did not measure, and why."""
    from accelbench.runner.reach import UnreachedDevices

    recorded = run.machine.get("unreached_devices")
    if isinstance(recorded, list):
        return [UnreachedDevices.from_dict(g).text for g in recorded if isinstance(g, dict)]
    touched = {m.spec.device for m in run.measurements} | {s.spec.device for s in run.skips}
    return [f"{d.name} ({d.id}) found, not measured in this run (the run predates recorded reasons; "
            "`accelbench list` shows what each backend reaches now)"
            for d in run.devices.values() if d.id not in touched]


def unreached_html(run: RunData) -> str:
    lines = unreached_lines(run)
    if not lines:
        return ""
    items = "".join(f'<li class="warning"><span class="kind">not measured</span>{html.escape(line)}</li>'
                    for line in lines)
    return f'<h3>Devices found, not measured</h3><ul class="findings" id="unreached-{html.escape(run.run_id)}">{items}</ul>'
