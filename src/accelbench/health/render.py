"""The check's report as text: one line per finding, grouped by device, the verdict last."""
from __future__ import annotations

import sys

from accelbench.health.model import FAIL, INCONCLUSIVE, PASS

VERDICT_LINES = {
    PASS: "healthy",
    FAIL: "a fault: do not run jobs here until the FAIL lines above are fixed",
    INCONCLUSIVE: "the machine was busy while it was measured; run the check again when it is quiet",
}


def _figure(value, unit: str) -> str:
    if isinstance(value, float) and unit in ("FLOP/s", "B/s"):
        return f"{value / 1e9:.1f} G{unit}"
    return f"{value}{' ' + unit if unit and not isinstance(value, (dict, list)) else ''}"


def render(report, out=None) -> None:
    from accelbench.terminal import printable

    out = out or sys.stdout
    print(f"accelbench check ({report.level}) on {report.host}: {len(report.findings)} checks in "
          f"{report.elapsed_s:.1f} s", file=out)
    device = None
    for f in report.findings:
        if f.device != device:
            device = f.device
            print(f"\n{device}", file=out)
        print(printable(f"  {f.status:<12} {f.check:<24} {f.summary}"), file=out)
        if f.expected is not None and f.source:
            print(printable(f"  {'':<12} {'':<24} measured {_figure(f.measured, f.unit)}, expected "
                            f"{_figure(f.expected, f.unit)} from {f.source}" + (f": {f.detail}" if f.detail else "")),
                  file=out)
    verdict = VERDICT_LINES.get(report.status, f"healthy, with warnings ({report.status})")
    print(f"\n{report.status}: {verdict} (exit {report.exit_code})", file=out)
