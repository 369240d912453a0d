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
    if value is None:  # e.g. no quota at all: not "None cores"
        return "nothing"
    if isinstance(value, float) and unit in ("FLOP/s", "B/s"):
        return f"{value / 1e9:.1f} G{unit}"
    return f"{value}{' ' + unit if unit and not isinstance(value, (dict, list)) else ''}"


def render(report, out=None) -> None:
    from accelbench.terminal import plain_width, printable, wrapped

    out = out or sys.stdout
    width = plain_width(out)
    print("\n".join(wrapped(f"accelbench check ({report.level}) on {report.host}: {len(report.findings)} checks "
                             f"in {report.elapsed_s:.1f} s", width)), file=out)
    device = None
    for f in report.findings:
        if f.device != device:
            device = f.device
            print(f"\n{device}", file=out)
        lines = _finding_lines(f, width, wide=width >= 120)
        print(printable("\n".join(lines), keep_newlines=True), file=out)
    verdict = VERDICT_LINES.get(report.status, f"healthy, with warnings ({report.status})")
    print("\n" + "\n".join(wrapped(f"{report.status}: {verdict} (exit {report.exit_code})", width)), file=out)


def _finding_lines(f, width: int, wide: bool) -> list[str]:
    """A wide terminal: status, check and text in columns; a narrow one: status and check on a
    line, the text under them, indented."""
    from accelbench.terminal import wrapped

    figures = (f"measured {_figure(f.measured, f.unit)}, expected {_figure(f.expected, f.unit)} from {f.source}"
               + (f": {f.detail}" if f.detail else "")) if f.expected is not None and f.source else ""
    if wide:
        indent = " " * 40
        return wrapped(f.summary, width, f"  {f.status:<12} {f.check:<24} ", indent) + \
            (wrapped(figures, width, indent) if figures else [])
    return [f"  {f.status} {f.check}", *wrapped(f.summary, width, "      "),
            *(wrapped(figures, width, "      ") if figures else [])]
