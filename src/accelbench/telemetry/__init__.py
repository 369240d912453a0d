"""Device telemetry: utilisation, memory, clocks, power and energy, sampled while work runs.

    from accelbench.telemetry import monitor
    with monitor(interval=0.1) as m:
        my_training_step()
    print(m.summary())

Sources: the CPU (psutil), CPU energy (Linux RAPL), NVIDIA (NVML), AMD (amdsmi), Apple (ioreg). An
OpenCL device has no telemetry API and is said to have none. Every vendor library is imported only
when its source opens, so importing this package costs nothing beyond the standard library.
"""
from __future__ import annotations

from accelbench.telemetry.sampler import DEFAULT_INTERVAL_S, TelemetrySampler, Window, monitor

__all__ = ["DEFAULT_INTERVAL_S", "TelemetrySampler", "Window", "monitor"]
