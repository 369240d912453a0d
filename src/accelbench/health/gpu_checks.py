"""Every NVIDIA GPU: NVML's state at idle, then a load step in a child process (health.gpu_load)
while NVML is sampled for throttle reasons, clocks and the PCIe link under load.
"""
from __future__ import annotations

import importlib.util
import threading
from typing import Any

from accelbench.health import expected as exp
from accelbench.health import nvml_health as nh
from accelbench.health.bounded import run_child
from accelbench.health.model import CONFIG, FAIL, HUNG, LINK, PASS, SKIP, HealthFinding, finding, ratio_status

# level -> (matmul order, pattern bytes, repeats, seconds the load step may take)
LOAD = {"quick": (4096, 2**28, 5, 60.0), "standard": (8192, 2**30, 10, 90.0), "long": (8192, 2**33, 50, 300.0)}
PCIE_LANE_BYTES_S = {1: 0.25e9, 2: 0.5e9, 3: 0.985e9, 4: 1.969e9, 5: 3.938e9, 6: 7.563e9}  # after encoding
SAMPLE_EVERY_S = 0.2


class Sampler:
    """NVML throttle reasons, SM clock and PCIe generation while the load step runs."""

    def __init__(self, nvml, index: int):
        self.asker = nh.Asker(nvml, index, "")
        self.mask, self.clocks, self.gens = 0, list[int](), list[int]()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="accelbench-check-sampler")

    def _loop(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S) and not self.asker.hung:
            mask, _ = self.asker.ask("throttle_reasons")
            clock, _ = self.asker.ask("clock_mhz", "sm")
            gen, _ = self.asker.ask("pcie_generation", "current")
            self.mask |= mask or 0
            self.clocks += [clock] if clock else []
            self.gens += [gen] if gen else []

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()


def load_findings(nvml, device, level: str) -> list[HealthFinding]:
    dev = device.id
    if importlib.util.find_spec("torch") is None:
        return [finding(f"{dev}.load", dev, SKIP, "no torch installed: no memory pattern test, matmul or bandwidth "
                        "(pip install torch with CUDA)", source=CONFIG)]
    index = device.visible_index
    if index is None:
        return [finding(f"{dev}.load", dev, SKIP, "hidden by CUDA_VISIBLE_DEVICES: no load step", source=CONFIG)]
    order, pattern_bytes, repeats, limit_s = LOAD[level]
    with Sampler(nvml, int(device.properties.get("nvml_index", 0))) as sampled:
        outcome = run_child("accelbench.health.gpu_load", ["--index", str(index), "--order", str(order),
                            "--memory-bytes", str(pattern_bytes), "--repeats", str(repeats)], limit_s)
    if outcome.timed_out:
        return [finding(f"{dev}.load", dev, FAIL, f"the load step did not finish within {limit_s:.0f} s: the GPU "
                        "hangs (killed)", elapsed_s=outcome.elapsed_s, source=CONFIG)]
    if outcome.error is not None:
        return [finding(f"{dev}.load", dev, SKIP, f"the load step could not run: {outcome.error}",
                        elapsed_s=outcome.elapsed_s, source=CONFIG)]
    return judge_load(device, outcome.value, sampled, outcome.elapsed_s)


def judge_load(device, result: dict[str, Any], sampled: Sampler, elapsed_s: float) -> list[HealthFinding]:
    dev, props = device.id, device.properties
    found = [_pattern(dev, result)]
    metric = "bf16_matrix" if result.get("matmul_dtype") == "bfloat16" else "fp32"
    found.append(_rate(f"{dev}.matmul", dev, result.get("matmul_flop_s"), exp.best(exp.from_device(device, metric)),
                       "FLOP/s", f"matmul {result.get('matmul_dtype')}"))
    found.append(_rate(f"{dev}.memory_bandwidth", dev, result.get("d2d_bytes_s"),
                       exp.best(exp.from_device(device, "memory_bandwidth")), "B/s", "device-to-device copy"))
    found.append(_rate(f"{dev}.host_to_device", dev, result.get("h2d_bytes_s"), link_theory(props), "B/s",
                       "pinned host-to-device copy"))
    a = nh.Asker(None, 0, dev)
    found.append(nh.throttle_finding(a, sampled.mask, "", "under load"))
    found.append(_clock(dev, sampled.clocks, props.get("max_sm_clock_mhz")))
    if sampled.gens:
        loaded = {**props, "pcie_generation_current": max(sampled.gens)}
        found.append(nh.pcie_finding(a, loaded, loaded=True))
    return [f if f.elapsed_s else _with_time(f, elapsed_s) for f in found]


def _with_time(f: HealthFinding, elapsed_s: float) -> HealthFinding:
    from dataclasses import replace

    return replace(f, elapsed_s=elapsed_s)


def link_theory(props: dict) -> exp.Expected | None:
    gen, width = props.get("pcie_generation_max"), props.get("pcie_width_max_lanes")
    if gen not in PCIE_LANE_BYTES_S or not width:
        return None
    return exp.Expected(PCIE_LANE_BYTES_S[gen] * width, LINK,
                        f"PCIe gen {gen} x{width}: {PCIE_LANE_BYTES_S[gen] / 1e9:.3g} GB/s per lane after encoding")


def _pattern(dev: str, result: dict) -> HealthFinding:
    errors, size = result.get("pattern_errors"), result.get("pattern_bytes", 0)
    shown = f"{size / 2**20:.0f} MiB, patterns 00 FF 55 AA and a ramp"
    if errors:
        return finding(f"{dev}.memory_pattern", dev, FAIL, f"{errors} byte(s) read back wrong ({shown}): faulty memory",
                       measured=errors, expected=0, source=CONFIG)
    return finding(f"{dev}.memory_pattern", dev, PASS, f"memory pattern test clean ({shown})", measured=0, expected=0,
                   source=CONFIG)


def _rate(check: str, dev: str, value: float | None, expected: exp.Expected | None, unit: str, what: str) -> HealthFinding:
    if not value:
        return finding(check, dev, SKIP, f"{what}: not measured", unit=unit)
    if expected is None:
        return finding(check, dev, SKIP, f"{what} {value / 1e9:.1f} G{unit}: no expected figure", measured=value, unit=unit)
    ratio = value / expected.value
    status = ratio_status(ratio, expected.warn_below, expected.fail_below)
    return finding(check, dev, status, f"{what} {value / 1e9:.1f} G{unit}, {ratio:.0%} of the expected "
                   f"{expected.value / 1e9:.1f} G{unit} ({expected.source})", measured=value, expected=expected.value,
                   unit=unit, source=expected.source, detail=expected.detail)


def _clock(dev: str, clocks: list[int], max_mhz: int | None) -> HealthFinding:
    if not clocks or not max_mhz:
        return finding(f"{dev}.clock", dev, SKIP, "SM clock under load not sampled", source=CONFIG)
    top = max(clocks)
    status = ratio_status(top / max_mhz, 0.7, 0.0)
    return finding(f"{dev}.clock", dev, status, f"SM clock under load up to {top} of {max_mhz} MHz",
                   measured=top, expected=max_mhz, unit="MHz", source=CONFIG)


def nvidia_findings(devices: list, level: str, nvml=None) -> list[HealthFinding]:
    """Every NVIDIA GPU of the inventory; `nvml` a replay in tests, else the real library."""
    if not devices:
        return []
    if nvml is None:
        try:
            nvml = nh.load()
        except ModuleNotFoundError:
            return [finding(f"{d.id}.nvml", d.id, SKIP, "nvidia-ml-py not installed: pip install accelbench[nvidia]")
                    for d in devices]
    why = nh.start(nvml)
    if why:
        return [finding(f"{d.id}.nvml", d.id, FAIL, why, source=CONFIG) for d in devices]
    found: list[HealthFinding] = []
    for device in devices:
        state = nh.state_findings(nvml, device)
        found += state
        if not _hung(state):  # a GPU whose driver hangs would hang the load step too
            found += load_findings(nvml, device, level)
    return found


def _hung(findings: list[HealthFinding]) -> bool:
    return any(f.unanswered == HUNG for f in findings)

