"""Where a run's resident-memory peak comes from (issue 28): each spec's measurement and each group of
paired rounds, the peak reset before each (Linux: /proc/self/clear_refs), and the resident size
with the frameworks loaded before anything is measured. tracemalloc cannot see this: the arrays of
torch, jax and PoCL are native memory.

    python benchmarks/memory_peak.py [accelbench run arguments] [--limit-mb 1500]

With no run arguments it runs the quick suite, as `accelbench run` does (pass `--db` for a private
database; a settings file written by `accelbench setup` narrows the devices: XDG_CONFIG_HOME=an
empty folder measures every device). Prints the ten largest peaks and the largest; with
--limit-mb, exits 1 when the largest passes it. The whole process's figure, children included:

    /usr/bin/time -v accelbench run --db /tmp/x.db     # "Maximum resident set size"
"""
from __future__ import annotations

import argparse
import sys
import time

from accelbench.runner import execute, pairing


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # VmHWM := VmRSS


class Peaks:
    def __init__(self) -> None:
        self.rows: list[tuple[float, float, float, str]] = []   # (peak MB, resident before MB, seconds, what)

    def around(self, what: str, call, *args, **kwargs):
        _reset_peak()
        before, start = _status_mb("VmRSS"), time.perf_counter()
        try:
            return call(*args, **kwargs)
        finally:
            self.rows.append((_status_mb("VmHWM"), before, time.perf_counter() - start, what))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit-mb", type=float, default=None)
    ours, run_args = parser.parse_known_args(argv)
    peaks = Peaks()
    measure, pair = execute.measure_item, pairing.pair_group

    def measured(item, *args, **kwargs):
        return peaks.around(f"measure {item.spec.label()}", measure, item, *args, **kwargs)

    def paired(items, *args, **kwargs):
        spec = items[0].candidate.spec
        return peaks.around(f"pair {spec.workload} {dict(spec.params)} ({len(items)} speed-ups)", pair, items,
                            *args, **kwargs)

    from accelbench.cli.main import main as command_line  # noqa: TID251 - a benchmark is a top layer, as tests are

    execute.measure_item, pairing.pair_group = measured, paired
    code = command_line(["run", *run_args])
    if not peaks.rows:
        print("nothing measured", file=sys.stderr)
        return code or 1
    first_before = peaks.rows[0][1]
    print(f"\nresident with the frameworks loaded, before the first spec: {first_before:,.0f} MB")
    print("largest peaks (MB: peak, resident before; seconds; what):")
    for peak, before, seconds, what in sorted(peaks.rows, reverse=True)[:10]:
        print(f"  {peak:7,.0f} {before:7,.0f} {seconds:6.1f} s  {what}")
    for phase in ("measure", "pair"):
        rows = [row for row in peaks.rows if row[3].startswith(phase)]
        if rows:
            print(f"{phase}: {len(rows)} in {sum(row[2] for row in rows):.0f} s, largest peak "
                  f"{max(row[0] for row in rows):,.0f} MB")
    worst = max(peaks.rows)
    print(f"largest: {worst[0]:,.0f} MB in {worst[3]}")
    if ours.limit_mb is not None and worst[0] > ours.limit_mb:
        print(f"over the limit of {ours.limit_mb:,.0f} MB", file=sys.stderr)
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
