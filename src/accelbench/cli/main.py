"""`accelbench` command line: one module per command, loaded only when that command runs."""
from __future__ import annotations

import argparse
import importlib
import os
import sys

from accelbench._version import __version__
from accelbench.errors import UsageError

# command -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "info": ("accelbench.cli.info_cmd", "list every compute device and what it should reach"),
    "list": ("accelbench.cli.list_cmd", "show workloads, backends and the devices they reach"),
    "run": ("accelbench.cli.run_cmd", "measure workloads on every available device, verified, stored"),
    "runs": ("accelbench.cli.runs_cmd", "list the runs stored in the results database"),
    "show": ("accelbench.cli.show_cmd", "every figure of a stored run: the answer, a table per workload, findings"),
    "peak": ("accelbench.cli.peak_cmd", "a device's maximum and sustained matmul rate, with clock and power"),
    "ceilings": ("accelbench.cli.ceilings_cmd", "this machine's measured ceilings; --forget sets them aside"),
    "export": ("accelbench.cli.export_cmd", "write stored runs as a JSON document or a CSV table (--format csv)"),
    "report": ("accelbench.cli.report_cmd", "write a self-contained HTML report with figures and advice"),
    "compare": ("accelbench.cli.compare_cmd", "compare two runs (or a run with reference data), spec by spec"),
    "project": ("accelbench.cli.project_cmd", "project a run's workloads onto another device (roofline what-if)"),
    "monitor": ("accelbench.cli.monitor_cmd", "watch every device's utilisation, memory, power, clocks"),
    "setup": ("accelbench.cli.setup_cmd", "choose and save the default device(s) for accelbench run"),
    "submit": ("accelbench.cli.submit_cmd", "run a suite as Slurm jobs, one per node or GPU type"),
    "gather": ("accelbench.cli.gather_cmd", "import finished cluster jobs' results into the database"),
    "fleet": ("accelbench.cli.fleet_cmd", "a cluster sweep node type by node type: slow, failed and unmeasured nodes"),
    "import": ("accelbench.cli.import_cmd", "read runs from exported JSON documents, validated"),
    "check": ("accelbench.cli.check_cmd", "a bounded health check of every device: exit 0 healthy, 1 fault, 3 busy"),
}


class ArgumentParser(argparse.ArgumentParser):
    """argparse exits 2 on bad options; this makes it one line naming the command and the option."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (`{self.prog} --help` lists the options)\n")


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(prog="accelbench", description=(
        "What compute devices do I have, how much faster is the accelerator than the CPU, and why?"))
    parser.add_argument("--version", action="version", version=f"accelbench {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    for name, (module_name, help_text) in COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:  # a command whose module is absent from this installation
            if not (exc.name or "").startswith("accelbench"):
                raise
            continue
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        sub.add_argument("--debug", action="store_true", help="show raw exceptions and tracebacks")
        module.add_arguments(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    from accelbench.safe_write import StreamError, abandon_stdout, guard_standard_streams

    guard_standard_streams()
    try:
        code = _dispatch(argv)
        sys.stdout.flush()  # a full disk or a size limit is found here, not silently at exit
        return code
    except BrokenPipeError:  # `--help`, a table or a JSON document written into a closed pipe
        return _reader_went_away()
    except StreamError as exc:  # `accelbench export --all > FILE` on a full disk: one line, not 0
        abandon_stdout()
        command = next((a for a in (argv if argv is not None else sys.argv[1:]) if a in COMMANDS), "")
        print(f"accelbench{' ' + command if command else ''}: error: cannot write standard output: "
              f"{exc.strerror or exc} (the output is incomplete)", file=sys.stderr)
        return 2


def _dispatch(argv: list[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)  # the options' type= checks live in cli/validate.py
    except SystemExit as exc:  # a bad value (2), --help or --version (0): a status, as documented
        return exc.code if isinstance(exc.code, int) else 2
    if not args.command:
        parser.print_help()
        return 2
    module = importlib.import_module(COMMANDS[args.command][0])
    try:
        return int(module.run(args) or 0)
    except UsageError as exc:
        from accelbench.terminal import printable

        print(f"accelbench {args.command}: error: {printable(exc, keep_newlines=True)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # Ctrl-C, or a StopRun carrying SIGTERM's number
        print(f"accelbench {args.command}: interrupted", file=sys.stderr)
        return 128 + getattr(exc, "signum", 2)


def _reader_went_away() -> int:
    """`accelbench export | head`: the reader closed the pipe; stop quietly, as Unix tools do."""
    try:  # later writes (and the flush at exit) go nowhere instead of raising again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # stdout is not a file (captured by a test)
        pass
    return 128 + 13  # 141: what a shell reports for a tool stopped by SIGPIPE


def entry_point() -> None:
    sys.exit(main())
