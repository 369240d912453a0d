"""`accelbench monitor`: every device's utilisation, memory, clocks, power and temperature, live.

A terminal gets a table refreshed every --interval; a pipe or log file gets plain lines; --json
one object per line and --csv one row per device per poll, flushed each time. At the end (after
--duration, or on Ctrl-C) a summary gives Samples / Max / Min / Avg of each metric over the whole
window, as nvidia-smi's sample blocks do, with the energy used. Vendors without telemetry here are
named with the reason, at the start and in the summary.
"""
from __future__ import annotations

import csv
import json
import sys
import time
from datetime import datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.live import Live

from accelbench.runner.deadline import stop_on_signals
from accelbench.terminal import printable
from accelbench.timing import checkpoint

DEFAULT_INTERVAL_S = 1.0
STOP_CHECK_S = 0.05  # how soon a recorded Ctrl-C / SIGTERM ends the wait between readings


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("--interval", type=validate.seconds(validate.SECONDS_PER_DAY),
                        default=DEFAULT_INTERVAL_S, metavar="S",
                        help=f"seconds between readings (default {DEFAULT_INTERVAL_S:g})")
    parser.add_argument("--once", action="store_true", help="take one reading (after one interval) and exit")
    parser.add_argument("--duration", type=validate.seconds(validate.SECONDS_PER_YEAR), metavar="S",
                        help="stop after S seconds and print the summary")
    parser.add_argument("--device", metavar="IDS", type=validate.DEVICES,
                        help="comma-separated device ids to watch, as `accelbench info` lists them (default: all)")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="one JSON object per line, flushed every interval")
    output.add_argument("--csv", action="store_true", help="CSV, one row per device per interval (summary on stderr)")


def run(args) -> int:
    from accelbench.errors import UsageError
    from accelbench.settings import parse_device_list
    from accelbench.telemetry import TelemetrySampler

    if not args.interval > 0:
        raise UsageError(f"--interval must be > 0 seconds, got {args.interval:g}")
    if args.duration is not None and not args.duration > 0:
        raise UsageError(f"--duration must be > 0 seconds, got {args.duration:g}")
    devices = parse_device_list(args.device)
    _check_known(devices)
    sampler = TelemetrySampler(devices, args.interval).open()
    output = _output(args, sampler)
    try:
        with sampler.window() as window, stop_on_signals():
            output.start()
            _loop(args, sampler, output)
        if not args.once:  # Ctrl-C is the usual way to stop: it ends here too, with the summary
            output.finish(window.summary())
    finally:
        output.close()
        sampler.stop()
    if not sampler.device_infos():
        print("accelbench monitor: no device asked for has telemetry here (see the reasons above)", file=sys.stderr)
        return 1
    return 0


def _check_known(devices: list[str] | None) -> None:
    """An id this machine does not have is a typo: name it and the ids there are (exit 2)."""
    if not devices:
        return
    from accelbench.devices.inventory import collect_inventory
    from accelbench.errors import UsageError

    known = [device.id for device in collect_inventory().devices]
    unknown = [d for d in devices if d not in known]
    if unknown:
        raise UsageError(f"--device: unknown device {', '.join(map(repr, unknown))}; accepted: "
                         f"{', '.join(known) or 'none found'} (as `accelbench info` lists them), or all",
                         refused_devices=tuple(unknown))


def _loop(args, sampler, output) -> bool:
    """Poll on a fixed grid of ticks until --once, --duration or a stop signal; True when stopped.

    SIGINT / SIGTERM are only recorded (runner/deadline.py) and the loop looks for them while it
    waits: a KeyboardInterrupt raised inside a destructor or a gc callback is printed and lost, and
    the monitor would then never end."""
    started = time.perf_counter()
    ticks = 0
    try:
        while True:
            ticks += 1
            if _stopped_while_waiting(started + ticks * args.interval):
                return True
            sampler.poll()
            output.frame(sampler)
            if args.once or (args.duration is not None and time.perf_counter() - started >= args.duration - 1e-3):
                return False
    except KeyboardInterrupt:
        return True


def _stopped_while_waiting(until_s: float) -> bool:
    """Sleep until `until_s` (perf_counter) in short slices; True as soon as a stop was asked for."""
    while (left_s := until_s - time.perf_counter()) > 0:
        if checkpoint.stop_signal() is not None:
            return True
        time.sleep(min(left_s, STOP_CHECK_S))
    return checkpoint.stop_signal() is not None


def _output(args, sampler):
    if args.json:
        return JsonOutput(sampler)
    if args.csv:
        return CsvOutput(sampler)
    if sys.stdout.isatty():
        return LiveOutput(sampler)
    return PlainOutput(sampler)


def _no_data(sampler) -> list[dict]:
    return [n.to_dict() for n in sampler.no_data]


class PlainOutput:
    """Headless: a line per device per reading, the gaps once at the start, the summary at the end."""

    def __init__(self, sampler):
        from accelbench.terminal import plain_width

        self.sampler = sampler
        self.width = plain_width()  # $COLUMNS, the terminal's, or 80 in a pipe: lines fit it

    def start(self) -> None:
        from accelbench.telemetry.text import no_data_lines

        lines = no_data_lines(_no_data(self.sampler), self.width)
        if lines:
            print("No telemetry here:\n" + printable("\n".join(lines), keep_newlines=True), flush=True)

    def frame(self, sampler) -> None:
        from accelbench.telemetry.text import frame_line

        now = datetime.now().strftime("%H:%M:%S")
        for device_id, info in sampler.device_infos().items():
            print(printable(frame_line(now, device_id, sampler.latest.get(device_id, {}), self.width, info.labels),
                            keep_newlines=True), flush=True)

    def finish(self, summary: dict) -> None:
        from accelbench.telemetry.text import summary_lines

        print("\n" + printable("\n".join(summary_lines(summary, self.width)), keep_newlines=True), flush=True)

    def close(self) -> None:
        pass


class JsonOutput(PlainOutput):
    def start(self) -> None:
        pass

    def frame(self, sampler) -> None:
        now = time.time()
        line = {"time": datetime.fromtimestamp(now).astimezone().isoformat(timespec="milliseconds"), "t_s": now,
                "devices": {d: dict(sampler.latest.get(d, {})) for d in sampler.device_infos()},
                "no_telemetry": _no_data(sampler)}
        print(json.dumps(line), flush=True)

    def finish(self, summary: dict) -> None:
        print(json.dumps({"summary": summary}), flush=True)


class CsvOutput(PlainOutput):
    def __init__(self, sampler):
        from accelbench.telemetry.text import ordered

        super().__init__(sampler)
        metrics = [m for info in sampler.device_infos().values() for m in info.metrics]
        self.columns = ordered(dict.fromkeys(metrics))
        self.writer = csv.writer(sys.stdout)

    def start(self) -> None:
        self.writer.writerow(["time_s", "device", *self.columns])
        sys.stdout.flush()
        from accelbench.telemetry.text import no_data_lines
        from accelbench.terminal import plain_width

        self.width = plain_width(sys.stderr)  # the notes and summary go to stderr
        lines = no_data_lines(_no_data(self.sampler), self.width)
        if lines:
            print("No telemetry here:\n" + printable("\n".join(lines), keep_newlines=True), file=sys.stderr,
                  flush=True)

    def frame(self, sampler) -> None:
        now = f"{time.time():.3f}"
        for device_id in sampler.device_infos():
            values = sampler.latest.get(device_id, {})
            row = [";".join(v) if isinstance(v, list) else v for v in (values.get(c, "") for c in self.columns)]
            self.writer.writerow([now, device_id, *row])
        sys.stdout.flush()

    def finish(self, summary: dict) -> None:
        from accelbench.telemetry.text import summary_lines

        print(printable("\n".join(summary_lines(summary, self.width)), keep_newlines=True), file=sys.stderr,
              flush=True)


class LiveOutput(PlainOutput):
    """A terminal: one table, redrawn in place every reading."""

    def start(self) -> None:
        from rich.live import Live

        from accelbench.terminal import console

        self.console = console()
        self.live: Live | None = Live(console=self.console, auto_refresh=False, transient=False)
        self.live.start()

    def frame(self, sampler) -> None:
        if self.live is not None:  # None once closed
            self.live.update(self._table(sampler), refresh=True)

    def _table(self, sampler):
        from rich.console import Group
        from rich.table import Table

        from accelbench.telemetry.text import no_data_lines, value_text
        from accelbench.terminal import literal

        table = Table(title=f"accelbench monitor · every {sampler.interval_s:g} s · Ctrl-C stops",
                      title_justify="left")
        nominal = any("frequency_mhz" in info.labels for info in sampler.device_infos().values())
        for column in ("device", "util", "memory", "nominal clock" if nominal else "clock", "power", "temp",
                       "throttled by"):
            table.add_column(column, no_wrap=column != "throttled by")
        for device_id, info in sampler.device_infos().items():
            v = sampler.latest.get(device_id, {})

            def show(*metrics):
                metric = next((m for m in metrics if m in v), None)
                return value_text(metric, v[metric]) if metric else "—"
            memory = f"{show('memory_used_bytes')} / {show('memory_total_bytes')}"
            throttled = ", ".join(v.get("throttle_reasons") or [])
            table.add_row(literal(f"{device_id} {info.name}"), show("utilization_percent"), memory,
                          show("sm_clock_mhz", "gfx_clock_mhz", "frequency_mhz"), show("power_w", "power_from_energy_w"),
                          show("temperature_c"), literal(throttled))
        gaps = no_data_lines(_no_data(sampler), self.console.width)
        footer = ("[dim]No telemetry here:\n" + literal("\n".join(gaps)) + "[/]") if gaps else ""
        return Group(table, footer)

    def finish(self, summary: dict) -> None:
        from accelbench.telemetry.text import summary_lines

        self.close()
        self.console.print("\n".join(summary_lines(summary, self.console.width)), markup=False)

    def close(self) -> None:
        live = getattr(self, "live", None)
        if live is not None:
            live.stop()
            self.live = None
