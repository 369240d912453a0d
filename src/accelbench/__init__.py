"""accelbench: what compute devices do I have, how much faster is the accelerator, and why.

`import accelbench` stays light: no framework (torch, jax, cupy, pyopencl, pynvml,
matplotlib) is imported here. Heavier parts load on first use through __getattr__.
"""
from __future__ import annotations

from accelbench._version import __version__

_LAZY = {
    # name -> (module, attribute); loaded only when a user touches it
    "inventory": ("accelbench.store.ceilings", "measured_inventory"),
    "run": ("accelbench.api", "run"),
    "bench": ("accelbench.api", "bench"),
    "workload": ("accelbench.api", "workload"),
    "RunResults": ("accelbench.api", "RunResults"),
    "Compare": ("accelbench.api", "Compare"),
    "UsageError": ("accelbench.errors", "UsageError"),
    "monitor": ("accelbench.telemetry", "monitor"),
    "compare_runs": ("accelbench.report.compare", "compare_runs"),
    "load_run": ("accelbench.report.compare", "load_run"),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module_name, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module_name), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'accelbench' has no attribute {name!r}")
