"""deviceQuery's section of `accelbench info`: a GPU's execution limits in a few short rows.

Each row stays under ~55 characters so the section fits 80 columns beside the label column when
the output is piped (rich then draws 80 wide).
"""
from __future__ import annotations

from typing import Any

from accelbench.units import format_bytes

# properties shown by this section, not by the generic property list
QUERY_PROPERTIES = ("device_query", "device_query_source", "device_query_problems")


def _count(value: Any) -> str:
    return f"{value:,}" if isinstance(value, int) else "?"


def _yes(value: Any) -> str:
    return "?" if value is None else ("yes" if value else "no")


def _dims(value: Any) -> str:
    return "×".join(str(v) for v in value) if isinstance(value, list) else "?"


def _size(value: Any) -> str:
    return format_bytes(value) if isinstance(value, int) else "?"


def _mhz(value: Any) -> str:
    return f"{value:,.0f} MHz" if isinstance(value, (int, float)) else "? MHz"


def device_query_rows(properties: dict[str, Any]) -> list[tuple[str, str]]:
    """(label, text) rows for the device table; none for a device no runtime was asked about."""
    source = properties.get("device_query_source")
    if source is None:
        return []
    q = properties.get("device_query")
    if not isinstance(q, dict):
        return [("deviceQuery", str(source))]
    rows = [
        ("deviceQuery", f"via {source}"),
        ("  compute", f"cc {q.get('compute_capability', '?')} · {_count(q.get('multiprocessor_count'))} SMs · "
                      f"clock {_mhz(q.get('sm_clock_mhz'))}"),
        ("  threads", f"warp {_count(q.get('warp_size'))} · {_count(q.get('max_threads_per_block'))}/block · "
                      f"{_count(q.get('max_threads_per_multiprocessor'))}/SM · "
                      f"{_count(q.get('max_blocks_per_multiprocessor'))} blocks/SM"),
        ("  block dims", f"{_dims(q.get('max_block_dimensions'))} · grid {_dims(q.get('max_grid_dimensions'))}"),
        ("  shared mem", f"{_size(q.get('shared_memory_per_block_bytes'))}/block · "
                         f"{_size(q.get('shared_memory_per_block_optin_bytes'))} opt-in · "
                         f"{_size(q.get('shared_memory_per_multiprocessor_bytes'))}/SM"),
        ("  registers", f"{_count(q.get('registers_per_block'))}/block · "
                        f"{_count(q.get('registers_per_multiprocessor'))}/SM"),
        ("  memory", f"{_mhz(q.get('memory_clock_mhz'))} × {_count(q.get('memory_bus_width_bits'))} bit · "
                     f"L2 {_size(q.get('l2_cache_bytes'))} · const {_size(q.get('total_constant_memory_bytes'))}"),
        ("  engines", f"{_count(q.get('async_engine_count'))} copy · concurrent kernels "
                      f"{_yes(q.get('concurrent_kernels'))} · unified addr {_yes(q.get('unified_addressing'))}"),
        ("  modes", f"compute {q.get('compute_mode', '?')} · time limit {_yes(q.get('kernel_exec_timeout'))} · "
                    f"ECC {_yes(q.get('ecc_enabled'))}"),
        ("  PCI", str(q.get("pci_bus_id", "?"))),
    ]
    for problem in properties.get("device_query_problems") or []:
        rows.append(("  unread", str(problem)))
    return rows
