"""`accelbench ceilings`: this machine's measured ceilings, where each came from, and --forget."""
from __future__ import annotations

import json
import socket
import sys


def add_arguments(parser) -> None:
    from accelbench.cli import validate

    parser.add_argument("--db", metavar="PATH", type=validate.DB, help="results database")
    parser.add_argument("--forget", action="store_true",
                        help="set the stored results aside as ceilings (they stay stored and listed)")
    parser.add_argument("--device", type=validate.nonempty("a device id"),
                        help="with --forget: only this device id (default: every device of this host)")
    parser.add_argument("--json", action="store_true", help="print as JSON")


def run(args) -> int:
    from accelbench.devices.inventory import collect_inventory
    from accelbench.store.ceilings import stored_ceilings
    from accelbench.runner.peak_results import peak_pairs
    from accelbench.store.db import NoDatabaseError, Store

    host = socket.gethostname()
    try:
        with Store(args.db, create=False) as store:
            if args.forget:
                count = store.forget_ceilings(host, args.device)
                where = f"device {args.device}" if args.device else "every device"
                print(f"accelbench ceilings: {count} stored results of {where} on {host} no longer count as "
                      "ceilings; the next valid matmul and stream runs set new ones")
                return 0
            devices = {d.id: d for d in collect_inventory().devices}
            found = stored_ceilings(store, host, devices)
            pairs = peak_pairs(store.ceiling_candidates(host))
    except NoDatabaseError as exc:
        print(f"accelbench ceilings: {exc}", file=sys.stderr)
        return 0 if not args.forget else 2
    if args.json:
        json.dump([{"device": c.device, "metric": c.metric, "value": c.value, "unit": c.unit, "run_id": c.run_id,
                    "spec": c.spec.to_dict()} for c in found.values()], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    _render(found, host)
    if pairs:  # `accelbench peak`'s maximum and sustained rate, told apart
        from accelbench.runner.peak_results import pair_text
        print("Maximum and sustained matmul rate (accelbench peak):")
        for (device, dtype), pair in sorted(pairs.items()):
            print(f"  {device} {pair_text(dtype, pair)}")
    return 0


def _render(found: dict, host: str) -> None:
    from rich.table import Table

    from accelbench.terminal import console, literal
    from accelbench.units import format_si

    out = console()
    if not found:
        out.print(f"No measured ceilings on {literal(host)} yet: `accelbench run matmul stream` measures them.")
        return
    table = Table(title=f"Measured ceilings on {literal(host)} (valid results of built-in workloads run here)",
                  title_justify="left", show_edge=False, pad_edge=False)
    for column in ("device", "ceiling", "rate", "from"):
        table.add_column(column, overflow="fold")
    for c in sorted(found.values(), key=lambda c: (c.device, c.metric)):
        table.add_row(literal(c.device), c.metric, format_si(c.value, c.unit), literal(f"{c.spec.label()} in run {c.run_id}"))
    out.print(table)
