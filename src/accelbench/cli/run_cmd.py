"""`accelbench run`: measure workloads on every available device (or the ones asked for)."""
from __future__ import annotations

import json
import sys

from accelbench.backends.base import DTYPES
from accelbench.errors import UsageError
from accelbench.vocabulary import RIGOR_NAMES

WAIT_QUIET_S = 60


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD", type=validate.workloads,
                        action=validate.Flatten,
                        help="workloads to run (default: the quick suite; `accelbench list` shows them)")
    parser.add_argument("--sizes", type=validate.sizes, help="comma-separated sizes (matmul: orders; stream: elements; transfer: bytes, e.g. 1M,64M)")
    parser.add_argument("--dtype", type=validate.DTYPES, help=f"comma-separated dtypes ({', '.join(DTYPES)})")
    parser.add_argument("--device", type=validate.DEVICES, help="comma-separated device ids, as `accelbench info` shows them (cpu, cuda:0, opencl:0:0)")
    parser.add_argument("--backend", type=validate.BACKENDS,
                        help="comma-separated backends (numpy, torch, jax, cupy, pyopencl; keras-torch, keras-jax: "
                             "the deep-learning workloads as the tutorials wrote them in Keras 3, one Keras backend "
                             "per run, used only when named)")
    parser.add_argument("--rigor", choices=RIGOR_NAMES,
                        help="quick (±5%%, short budget), standard (±2%%), rigorous (±1%%); "
                             "default: quick for the quick suite, standard when workloads are named")
    parser.add_argument("--quick", action="store_true",
                        help="use the workloads' small quick grids (implied by --rigor quick)")
    parser.add_argument("--db", metavar="PATH", type=validate.DB, help="results database (default: $ACCELBENCH_DB or the user data dir)")
    parser.add_argument("--seed", type=validate.SEED, default=None,
                        help=f"seed for the random inputs, 0 to {validate.MAX_SEED} (recorded with the run)")
    parser.add_argument("--timeout", type=validate.SPEC_TIMEOUT, default=None, metavar="SECONDS",
                        help="end a spec that takes longer than this and store it as failed; the run "
                             "goes on (default: 600)")
    parser.add_argument("--json", action="store_true",
                        help="print the results as JSON instead of tables (schema: docs/results-schema.md)")
    parser.add_argument("--schema", action="store_true", help="print the JSON schema of --json output and exit")
    parser.add_argument("--details", action="store_true",
                        help="after the answer, every result's table, the skips and the findings "
                             "(`accelbench show` prints them for a stored run)")
    parser.add_argument("--wait-quiet", nargs="?", const=WAIT_QUIET_S, default=None, metavar="SECONDS",
                        type=validate.whole_number(1, 3600),
                        help=f"before measuring, wait until other processes leave the cores idle, at most "
                             f"SECONDS (default {WAIT_QUIET_S}); then run whatever the load")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--no-telemetry", action="store_true", help="do not sample utilisation, clocks and energy")
    parser.add_argument("--verbose", action="store_true",
                        help="training workloads print the tutorial's per-epoch line (loss, accuracy, val_loss, "
                             "val_acc, seconds per epoch and per sample) as they train")


def run(args) -> int:
    from accelbench.runner.deadline import stop_on_signals
    from accelbench.timing.checkpoint import stop_signal

    if args.schema:
        from accelbench.schemas import load_schema

        print(json.dumps(load_schema("results"), indent=2))
        return 0

    if getattr(args, "verbose", False):
        _print_epochs()
    with stop_on_signals():  # from the start: a signal while jax loads still stops the run
        status = _run(args)
        signum = stop_signal()
    return 128 + signum if status == 130 and signum else status


def _print_epochs() -> None:
    """The workloads log each epoch to "accelbench.epochs"; --verbose shows it on stderr."""
    import logging

    from accelbench.workloads.dl.training import EPOCH_LOG

    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(message)s"))
    EPOCH_LOG.addHandler(handler)
    EPOCH_LOG.setLevel(logging.INFO)
    EPOCH_LOG.propagate = False


def _run(args) -> int:
    from accelbench.store.ceilings import measured_inventory
    from accelbench.runner.deadline import DEFAULT_SPEC_TIMEOUT_S
    from accelbench.runner.plan import parse_list, parse_sizes
    from accelbench.runner.run_config import RunConfig
    from accelbench.session import load_backends, run_plan
    from accelbench.timing.rigor import get_rigor
    from accelbench.vocabulary import DEFAULT_SEED
    from accelbench.devices.model import repeated_host_cpus
    from accelbench.runner.plan import build_plan
    from accelbench.session import host_memory_bytes
    from accelbench.store.db import Store

    suite = not args.workloads
    rigor = args.rigor or ("quick" if suite else "standard")
    backend_names = _backend_names(args.backend)
    backends = load_backends(backend_names)
    inventory = measured_inventory(db_path=args.db)
    try:
        devices = _devices(args.device, backends)
        plan = build_plan(args.workloads or None, sizes=parse_sizes(args.sizes),
                          dtypes=parse_list(args.dtype, DTYPES, "--dtype"),
                          devices=devices, backends=backends, quick=suite or args.quick or rigor == "quick",
                          host_memory_bytes=host_memory_bytes(), known_devices={d.id for d in inventory.devices},
                          repeated=repeated_host_cpus(inventory.devices))
    except UsageError as error:  # `--device cuda:0` with a CPU-only torch: say why, not only "no"
        raise UsageError(_why_unreachable(error, backends, args.db), refused_devices=error.refused_devices) from error
    if not plan.items:
        print("accelbench run: nothing to run: no available backend reaches the devices asked for "
              "(`accelbench list` shows what is available)", file=sys.stderr)
        return 2
    Store(args.db).close()  # an unwritable or corrupt database fails here, before any work
    from accelbench.runner.reach import unreached_devices

    unreached = unreached_devices(inventory.devices, backends)
    if not args.json:
        _print_unreached(unreached)
    _look_before(args.wait_quiet)
    selection = {"workloads": args.workloads, "sizes": args.sizes, "dtypes": args.dtype,
                 "devices": args.device, "backends": args.backend, "suite": "quick" if suite else None}
    # the epoch lines and a live progress bar would overwrite each other
    with _progress(len(plan.items), disabled=args.no_progress or getattr(args, "verbose", False)) as (on_start, on_done):
        seed = DEFAULT_SEED if args.seed is None else args.seed  # 0 is a seed, not "unset"
        results = run_plan(plan, backends, RunConfig(
            get_rigor(rigor), db=args.db, seed=seed, selection=selection, on_start=on_start, on_done=on_done, debug=args.debug,
            telemetry=not args.no_telemetry, inventory=inventory,
            timeout=DEFAULT_SPEC_TIMEOUT_S if args.timeout is None else args.timeout))
    if args.json:
        from accelbench.report.derived import finite
        from accelbench.timing.contention import run_notice

        # docs/results-schema.md; plain JSON: an unbounded interval end is null, never Infinity
        data = finite({**results.to_dict(), "unreached_devices": [group.to_dict() for group in unreached],
                       "busy_machine": run_notice(results.measurements, results.rigor)})
        json.dump(data, sys.stdout, indent=2, default=_jsonable, allow_nan=False)
        sys.stdout.write("\n")
    elif args.details:
        _print_details(results)
    else:
        _print_screen(results, suite)
    if results.interrupted:
        print(f"accelbench run: interrupted: {len(results.measurements)} results and {len(results.skips)} "
              f"skips saved in run {results.run_id} ({results.db_path})", file=sys.stderr)
        return 130
    if not results.measurements:
        print(f"accelbench run: nothing was measured ({len(results.skips)} skipped): "
              f"{_commonest_reason(results.skips)}", file=sys.stderr)
        return 1
    return 0


def _look_before(wait_s: int | None) -> None:
    """A look of half a second at the machine before the first measurement (timing/busy_look.py):
    one line if other processes hold the cores; with --wait-quiet, a bounded wait for them to stop."""
    from accelbench.terminal import printable
    from accelbench.timing import busy_look

    if wait_s is None:
        line = busy_look.busy_line(busy_look.look())
        if line:
            print(printable(f"accelbench run: busy: {line}"), file=sys.stderr, flush=True)
        return
    told: list[str] = []

    def waiting(line: str) -> None:
        if not told:
            print(printable(f"accelbench run: waiting up to {wait_s} s for a quiet machine: {line}"),
                  file=sys.stderr, flush=True)
            told.append(line)
    quiet, seen = busy_look.wait_quiet(float(wait_s), waiting)
    if not quiet:
        line = busy_look.busy_line(seen) or "its load could not be read"
        print(printable(f"accelbench run: still busy after {wait_s} s, measuring anyway: {line}"),
              file=sys.stderr, flush=True)
    elif told:
        print("accelbench run: the machine is quiet now", file=sys.stderr, flush=True)


def _commonest_reason(skips: list) -> str:
    """The skip reason most specs share (the one fix that would help most), with its count."""
    from collections import Counter

    if not skips:
        return "no spec ran"
    reason, count = Counter(s.reason.splitlines()[0] for s in skips).most_common(1)[0]
    return reason if count == len(skips) else f"{reason} ({count} of {len(skips)}; `accelbench runs` lists the rest)"


def _backend_names(text: str | None) -> list[str] | None:
    from accelbench.backends.registry import backend_names
    from accelbench.runner.plan import parse_list

    return parse_list(text, backend_names(), "--backend")


def _devices(cli_value: str | None, backends: dict) -> list[str] | None:
    """--device > ACCELBENCH_DEVICE > the settings file (`accelbench setup`) > every available device."""
    import os

    from accelbench.settings import resolve_devices

    available = sorted({d for b in backends.values() if b.availability().ok for d in b.device_ids()})
    devices, warnings = resolve_devices(cli_value, os.environ, available)
    for warning in warnings:
        print(f"accelbench run: warning: {warning}", file=sys.stderr)
    return devices


def _unreached(backends: dict, db: str | None):
    """The inventory for the run, and its devices no backend reaches (named before any result)."""
    from accelbench.store.ceilings import measured_inventory
    from accelbench.runner.reach import unreached_devices

    inventory = measured_inventory(db_path=db)
    return inventory, unreached_devices(inventory.devices, backends)


def _why_unreachable(error: UsageError, backends: dict, db: str | None) -> str:
    """The error's message, with the reason and the fix for each device it refuses that the inventory has."""
    if not error.refused_devices:
        return str(error)
    groups = [g for g in _unreached(backends, db)[1] if set(g.device_ids) & set(error.refused_devices)]
    return "; ".join([str(error), *(g.text for g in groups)])


def _print_unreached(unreached: list) -> None:
    """At the top of the output: a GPU that a CPU-only framework ignores must not pass in silence."""
    if not unreached:
        return
    from accelbench.terminal import console as make_console
    from accelbench.terminal import hanging, literal

    console = make_console()
    console.print("[bold]Devices found that this run cannot measure[/]:")
    for group in unreached:  # wrapped like all else: its first line names the device, for grep
        console.print(hanging("[yellow]![/]", literal(group.text)))
    console.print()
    sys.stdout.flush()


def _jsonable(value):
    if value == float("inf") or value == float("-inf"):
        return None
    return str(value)


def _print_details(results) -> None:
    """The answer in full, a table per workload, skips and findings (`accelbench show` for a stored run)."""
    from accelbench.cli.show_cmd import print_details

    print_details(results.rows, results.skips, results.devices, results.machine, rigor=results.rigor,
                  run_line=f"Run {results.run_id}: {len(results.measurements)} results, {len(results.skips)} "
                           f"skipped, saved in {results.db_path}")


def _print_screen(results, suite: bool = False) -> None:
    """One screen: the answer, its speed-ups, the caveats, where everything else is (report/run_screen.py)."""
    from accelbench.report.run_screen import render_run
    from accelbench.terminal import console as make_console
    from accelbench.workloads.registry import BY_NAME_ALSO

    render_run(results.headline(), results.skips, make_console(), run_id=results.run_id, db_path=results.db_path,
               results=list(results.measurements), also=f"More by name: {BY_NAME_ALSO}."
               if suite else "")


class _progress:
    """A progress bar over the whole plan on stderr: what runs now, how many are done, the ETA."""

    def __init__(self, total: int, disabled: bool):
        self.total, self.disabled, self.done = total, disabled, 0
        self.bar = None

    def __enter__(self):
        if self.disabled:
            return None, None
        if not sys.stderr.isatty():  # a log file or a cluster job: one line per finished spec
            return None, self._plain_done
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        from accelbench.terminal import console

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                            console=console(file=sys.stderr, highlight=True), transient=True)
        self.bar.start()
        self.task = self.bar.add_task("planning", total=self.total)
        return self._start, self._done

    def __exit__(self, *exc):
        if self.bar:
            self.bar.stop()
        return False

    def _start(self, item):
        from accelbench.report.summary import params_text, where
        from accelbench.terminal import literal

        self.bar.update(self.task, description=literal(f"{item.spec.workload} {where(item.spec)} {params_text(item.spec)}"))

    def _done(self, item, result):
        self.bar.advance(self.task)

    def _plain_done(self, item, result):
        from accelbench.report.summary import params_text, where
        from accelbench.terminal import printable
        from accelbench.timing.stats import median
        from accelbench.units import format_seconds

        from accelbench.terminal import output_width

        self.done += 1
        if hasattr(result, "samples_s"):
            outcome = f"{format_seconds(median(result.samples_s))}, {result.verdict}"
        else:
            outcome = f"skipped: {result.reason.splitlines()[0]}"
        what = printable(f"[{self.done}/{self.total}] {item.spec.workload} {where(item.spec)} {params_text(item.spec)}")
        width = output_width(sys.stderr) or 80
        room = max(10, width - len(outcome) - 2)  # the outcome whole; the spec cut where the line would pass the width
        shown = what if len(what) <= room else what[:room - 1] + "…"
        print(f"{shown}: {printable(outcome)}"[:width], file=sys.stderr, flush=True)
