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
            foreign = {host_of: peak_pairs((m, run_id) for m, run_id, h in store.foreign_peak_results(host)
                                           if h == host_of)
                       for host_of in sorted({h for *_, h in store.foreign_peak_results(host)})}
    except NoDatabaseError as exc:
        print(f"accelbench ceilings: {exc}", file=sys.stderr)
        return 0 if not args.forget else 2
    if args.json:
        json.dump([_ceiling_json(c, pairs) for c in found.values()], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    _render(found, host)
    if pairs:  # `accelbench peak`'s maximum and sustained rate, told apart
        print("Maximum and sustained matmul rate (accelbench peak):")
        _print_pairs(pairs)
    for host_of, found_there in foreign.items():
        print(f"Imported or from {host_of or 'an unnamed host'} (shown, never this machine's ceilings):")
        _print_pairs(found_there)
    return 0


def _print_pairs(pairs: dict) -> None:
    from accelbench.runner.peak_results import pair_lines

    for (device, dtype), pair in sorted(pairs.items()):
        print("\n".join(f"  {line}" for line in pair_lines(f"{device} {dtype}", pair)))


def _ceiling_json(ceiling, pairs: dict) -> dict:
    """One ceiling; a matmul ceiling carries its device and dtype's peak pair (null without one)."""
    from accelbench.runner.peak_results import pair_json

    entry = {"device": ceiling.device, "metric": ceiling.metric, "value": ceiling.value, "unit": ceiling.unit,
             "run_id": ceiling.run_id, "spec": ceiling.spec.to_dict()}
    if ceiling.spec.workload == "matmul":
        pair = pairs.get((ceiling.device, str(ceiling.spec.param("dtype"))))
        entry["peak_pair"] = pair_json(pair) if pair else None
    return entry


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
