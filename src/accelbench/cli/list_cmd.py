"""`accelbench list`: the workloads, the backends (available or why not) and the devices they reach."""
from __future__ import annotations

import json
import sys


def add_arguments(parser) -> None:
    parser.add_argument("--json", action="store_true", help="print the lists as JSON")


def collect() -> dict:
    from accelbench.backends.registry import backend_names, get_backend
    from accelbench.workloads.registry import QUICK_SUITE, get_workload, workload_names

    workloads = []
    for name in workload_names():
        try:
            workload = get_workload(name)
        except Exception as exc:  # noqa: BLE001 - a workload refused here is listed with the reason
            workloads.append({"name": name, "description": "", "dtypes": [], "size_param": "",
                              "in_quick_suite": False, "refused": str(exc)})
            continue
        workloads.append({"name": name, "description": workload.description, "dtypes": list(workload.dtypes),
                          "size_param": workload.size_param, "in_quick_suite": name in QUICK_SUITE})
    backends = []
    for name in backend_names():
        try:
            backend = get_backend(name)
            availability = backend.availability()
            devices = backend.device_ids() if availability.ok else []
            dtypes = {d: list(backend.dtypes(d)) for d in devices}
            backends.append({"name": name, "available": availability.ok, "reason": availability.reason,
                             "devices": devices, "dtypes": dtypes})
        except Exception as exc:  # noqa: BLE001 - a broken backend is listed with its error
            backends.append({"name": name, "available": False, "reason": f"error: {exc}", "devices": [], "dtypes": {}})
    return {"workloads": workloads, "backends": backends}


def run(args) -> int:
    listing = collect()
    if args.json:
        json.dump(listing, sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    from rich.table import Table

    from accelbench.terminal import console as make_console
    from accelbench.terminal import literal  # plugins name workloads and backends: data

    console = make_console()
    # narrow: what each workload measures gets the room, its dtypes go on the line under it
    narrow = console.width < 120
    table = Table(title="[bold]Workloads[/]", title_justify="left", show_edge=False, pad_edge=False)
    columns = ("workload", "--sizes\nsets", "quick\nsuite", "what it measures\ndtypes") if narrow else \
        ("workload", "what it measures", "dtypes", "--sizes sets", "quick suite")
    for column in columns:
        table.add_column(column, no_wrap=column != columns[-1 if narrow else 1] and column != "dtypes")
    for w in listing["workloads"]:
        if w.get("refused"):
            refused = f"[yellow]refused[/]: {literal(w['refused'])}"
            table.add_row(literal(w["name"]), "", "", refused) if narrow else \
                table.add_row(literal(w["name"]), refused, "", "", "")
            continue
        quick = "yes" if w["in_quick_suite"] else ""
        if narrow:
            table.add_row(literal(w["name"]), literal(w["size_param"]), quick,
                          f"{literal(w['description'])}\n[dim]dtypes: {literal(', '.join(w['dtypes']))}[/]")
        else:
            table.add_row(literal(w["name"]), literal(w["description"]), literal(", ".join(w["dtypes"])),
                          literal(w["size_param"]), quick)
    console.print(table)
    console.print()
    table = Table(title="[bold]Backends[/]", title_justify="left", show_edge=False, pad_edge=False)
    for column in ("backend", "status", "devices (dtypes)"):
        table.add_column(column, overflow="fold")
    for b in listing["backends"]:
        if b["available"]:  # "cpu only: torch … is built without CUDA" must not hide behind "available"
            status = "[green]available[/]" + (f" ([yellow]{literal(b['reason'])}[/])" if b["reason"] else "")
        else:
            status = f"[yellow]unavailable[/]: {literal(b['reason'])}"
        devices = "; ".join(f"{d} ({', '.join(b['dtypes'].get(d, []))})" for d in b["devices"]) or "—"
        table.add_row(literal(b["name"]), status, literal(devices))
    console.print(table)
    return 0
