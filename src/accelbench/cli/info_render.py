"""Render the inventory for a person: grouped by device, aligned, every number with its unit."""
from __future__ import annotations

from rich.console import Console
from rich.table import Table

from accelbench.cli.device_query_render import QUERY_PROPERTIES, device_query_rows
from accelbench.devices.inventory import Inventory
from accelbench.devices.model import OK, PEAK_METRICS, PROVENANCES, Device
from accelbench.runner.peak_results import PAIR_PROPERTY, pair_lines
from accelbench.terminal import console as make_console
from accelbench.terminal import literal
from accelbench.units import format_bytes, format_property, format_si, label

# CPU properties shown in their own rows, or not at all (the rest are listed generically)
_CPU_GROUPED = {
    "model", "vendor", "sockets", "physical_cores", "logical_cores", "usable_cpus", "features",
    "nominal_clock_mhz", "nominal_clock_source", "max_clock_mhz", "current_clock_mhz",
    "running_clock_mhz", "running_clock_method", "memory_total_bytes", "memory_available_bytes",
    "numa_nodes", "blas_libraries", "thread_environment", PAIR_PROPERTY,
}


def render_inventory(inventory: Inventory, console: Console | None = None, debug: bool = False) -> None:
    console = console or make_console()
    host = inventory.host
    console.print(f"[bold]Host[/] {literal(host['hostname'])} · {literal(host['os'])} {literal(host['os_release'])} · "
                  f"{literal(host['machine'])} · Python {literal(host['python'])} · accelbench {literal(host['accelbench'])}")
    for device in inventory.devices:
        console.print()
        console.print(_device_table(device))
    console.print()
    console.print(_probe_table(inventory, debug))
    if inventory.environment:
        console.print("[bold]Device environment[/] " + literal(format_property("env", inventory.environment)))
    if debug:
        for report in inventory.probes:
            if report.debug:
                console.print(f"[bold red]{literal(report.probe)}[/] raised:")
                console.print(report.debug, markup=False)


def _device_table(device: Device) -> Table:
    title = (f"[bold]{literal(device.id)}[/]  {literal(device.name)}  "
             f"[dim]({literal(device.vendor)} {literal(device.kind)}, via {literal(device.source)})[/]")
    table = Table.grid(padding=(0, 2))
    table.title, table.title_justify = title, "left"
    table.add_column(style="cyan", no_wrap=True)
    table.add_column(overflow="fold")
    rows = _cpu_rows(device) if device.kind == "cpu" and device.id == "cpu" else _generic_rows(device)
    for name, value in rows:  # the rows are plain text: every part of them came from a probe
        table.add_row(literal(name), literal(value))
    if device.reach:
        table.add_row("Reached by", literal(" · ".join(f"{b} → {i}" for b, i in device.reach.items())))
    for index, line in enumerate(_peak_lines(device)):
        table.add_row("Peaks" if index == 0 else "", line)
    for index, line in enumerate(_pair_lines(device)):  # `accelbench peak`'s stored pairs
        table.add_row("Max/sustained" if index == 0 else "", literal(line))
    for warning in device.warnings:
        table.add_row("[yellow]Warning[/]", f"[yellow]{literal(warning)}[/]")
    return table


def _cpu_rows(device: Device) -> list[tuple[str, str]]:
    p = device.properties
    rows = [("Topology", f"{p.get('sockets', '?')} socket(s) · {p.get('physical_cores', '?')} physical cores · "
                         f"{p.get('logical_cores', '?')} logical" +
             (f" · {p['usable_cpus']} usable by this process" if p.get("usable_cpus") else ""))]
    rows.append(("ISA", " ".join(p.get("features") or []) or "none detected"))
    caches = [f"{n.capitalize()} {format_bytes(p[f'{n}_cache_bytes'])} ×{p.get(f'{n}_cache_instances', 1)}"
              for n in ("l1d", "l1i", "l2", "l3") if p.get(f"{n}_cache_bytes")]
    rows.append(("Caches", " · ".join(caches) or "unknown"))
    rows.append(("Clock", _clock_text(p)))
    rows.append(("Memory", f"{format_bytes(p.get('memory_total_bytes'))} total · "
                           f"{format_bytes(p.get('memory_available_bytes'))} available · "
                           f"{p.get('numa_nodes') or '?'} NUMA node(s)"))
    for lib in p.get("blas_libraries") or []:
        rows.append((f"{lib.get('api', 'blas').upper() if lib.get('api') == 'blas' else lib.get('api', '').capitalize()}",
                     f"{lib.get('library')} {lib.get('version') or ''} · {lib.get('threads')} threads"
                     f" · core type {lib.get('core_type') or '—'} · {lib.get('threading_layer') or ''}"))
    env = p.get("thread_environment") or {}
    rows.append(("Thread env", format_property("env", env) if env else "none of OMP/MKL/OPENBLAS_* set"))
    rows += [(label(k), format_property(k, v)) for k, v in p.items()
             if k not in _CPU_GROUPED and "_cache_" not in k]
    return rows


def _clock_text(p: dict) -> str:
    parts = []
    if p.get("nominal_clock_mhz"):
        parts.append(f"nominal {format_property('x_mhz', p['nominal_clock_mhz'])}"
                     + (f" ({p['nominal_clock_source']})" if p.get("nominal_clock_source") else ""))
    if p.get("max_clock_mhz"):
        parts.append(f"max {format_property('x_mhz', p['max_clock_mhz'])}")
    if p.get("running_clock_mhz"):
        parts.append(f"running ≈ {format_property('x_mhz', p['running_clock_mhz'])} ({p.get('running_clock_method')})")
    elif p.get("running_clock_method"):
        parts.append(f"running clock {p['running_clock_method']}")
    return " · ".join(parts) or "unknown"


def _generic_rows(device: Device) -> list[tuple[str, str]]:
    rows = []
    if device.memory_bytes:
        rows.append(("Memory", format_bytes(device.memory_bytes)))
    for name, value in device.properties.items():
        if value is None or name == "memory_bytes" or name in QUERY_PROPERTIES or name == PAIR_PROPERTY:
            continue
        rows.append((label(name), format_property(name, value)))
    return rows + device_query_rows(device.properties)


def _peak_lines(device: Device) -> list[str]:
    lines = []
    order = {metric: i for i, metric in enumerate(PEAK_METRICS)}
    for figure in sorted(device.peaks, key=lambda f: (order.get(f.metric, 99), PROVENANCES.index(f.provenance))):
        lines.append(f"{literal(figure.metric):<16} {format_si(figure.value, figure.unit):>14}  "
                     f"[dim]{literal(figure.provenance)}:[/] {literal(figure.detail)}")
    return lines


def _pair_lines(device: Device) -> list[str]:
    pairs = device.properties.get(PAIR_PROPERTY) or {}
    return [line for dtype, pair in pairs.items() for line in pair_lines(dtype, pair, width=56)]


def _probe_table(inventory: Inventory, debug: bool) -> Table:
    table = Table(title="[bold]Probes[/]", title_justify="left", show_edge=False, pad_edge=False)
    table.add_column("probe")
    table.add_column("status")
    table.add_column("time", justify="right")
    table.add_column("detail", overflow="fold")
    for report in inventory.probes:
        style = "green" if report.status == OK else "yellow"
        table.add_row(literal(report.probe), f"[{style}]{literal(report.status)}[/]", f"{report.elapsed_s * 1000:.0f} ms",
                      literal(report.message) + ("  [dim](--debug shows why)[/]" if report.status == "error" and not debug else ""))
    return table
