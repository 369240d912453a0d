"""AMD GPU health through amdsmi: ECC error counts, bad (retired) pages, the PCIe link, throttling.

The calls extend devices.amd's adapter; `RecordedAmdHealth` replays recordings with these extra
fields per processor: "ecc_count": {"correctable_count": 0, "uncorrectable_count": 0},
"bad_pages": [...], "pcie_info": {"pcie_static": {"max_pcie_width": 16, "max_pcie_speed": 32000},
"pcie_metric": {"pcie_width": 16, "pcie_speed": 32000}}, "throttle_status": 0. Every call is bounded.
"""
from __future__ import annotations

from typing import Any

from accelbench.devices.amd import AmdsmiAdapter, AmdsmiError, RecordedAmdsmi
from accelbench.health import nvml_health as nh
from accelbench.health.bounded import call_within
from accelbench.health.model import (CALL_FAILED, CONFIG, FAIL, HUNG, PASS, SKIP, UNSUPPORTED, WARN, HealthFinding,
                                     Unanswered, finding)

CALL_LIMIT_S = 5.0
SPEED_TO_GEN = {2500: 1, 5000: 2, 8000: 3, 16000: 4, 32000: 5, 64000: 6}   # MT/s per lane


class AmdHealthAdapter(AmdsmiAdapter):
    def ecc_count(self, index: int) -> dict[str, Any]:
        return dict(self._call(self._a.amdsmi_get_gpu_total_ecc_count, self._handle(index)))

    def bad_pages(self, index: int) -> list:
        pages = self._call(self._a.amdsmi_get_gpu_bad_page_info, self._handle(index))
        return [] if pages in ("No bad pages found.", "N/A", None) else list(pages)

    def pcie_info(self, index: int) -> dict[str, Any]:
        return dict(self._call(self._a.amdsmi_get_pcie_info, self._handle(index)))

    def throttle_status(self, index: int) -> int:
        return int(self._call(self._a.amdsmi_get_gpu_metrics_info, self._handle(index))["throttle_status"])


class RecordedAmdHealth(RecordedAmdsmi):
    def ecc_count(self, index: int) -> dict[str, Any]:
        return dict(self._field(index, "ecc_count"))

    def bad_pages(self, index: int) -> list:
        return list(self._field(index, "bad_pages"))

    def pcie_info(self, index: int) -> dict[str, Any]:
        return dict(self._field(index, "pcie_info"))

    def throttle_status(self, index: int) -> int:
        return int(self._field(index, "throttle_status"))


def load() -> AmdHealthAdapter:
    import amdsmi  # lazily: loading it opens the ROCm library

    return AmdHealthAdapter(amdsmi)


def _ask(adapter, name: str, index: int) -> tuple[Any, str]:
    """(value, "") or (None, why not: an Unanswered)."""
    outcome = call_within(lambda: getattr(adapter, name)(index), CALL_LIMIT_S)
    if outcome.timed_out:
        return None, Unanswered(f"amdsmi {name} did not answer within {CALL_LIMIT_S:.0f} s: the GPU or its driver "
                                "hangs", HUNG)
    if isinstance(outcome.error, AmdsmiError):
        kind = UNSUPPORTED if outcome.error.code == "not_supported" else CALL_FAILED
        return None, Unanswered(f"amdsmi {name}: {outcome.error.message} ({outcome.error.code})", kind)
    if outcome.error is not None:
        return None, Unanswered(f"amdsmi {name}: {type(outcome.error).__name__}: {outcome.error}", CALL_FAILED)
    return outcome.value, ""


def _unanswered(dev: str, check: str, why: str) -> HealthFinding:
    kind = getattr(why, "kind", CALL_FAILED)
    return finding(f"{dev}.{check}", dev, SKIP if kind == UNSUPPORTED else FAIL, why, source=CONFIG, unanswered=kind)


def ecc_finding(adapter, index: int, dev: str) -> HealthFinding:
    counts, why = _ask(adapter, "ecc_count", index)
    if counts is None:
        return _unanswered(dev, "ecc", why)
    corrected, uncorrected = int(counts.get("correctable_count", 0)), int(counts.get("uncorrectable_count", 0))
    measured = {"corrected": corrected, "uncorrected": uncorrected}
    if uncorrected:
        return finding(f"{dev}.ecc", dev, FAIL, f"{uncorrected} uncorrected ECC error(s): drain the GPU and reset it",
                       measured=measured, expected=0, source=CONFIG)
    status = WARN if corrected > nh.CORRECTED_ECC_WARN else PASS
    return finding(f"{dev}.ecc", dev, status, f"{corrected} corrected, no uncorrected ECC errors",
                   measured=measured, expected=0, source=CONFIG)


def bad_pages_finding(adapter, index: int, dev: str) -> HealthFinding:
    pages, why = _ask(adapter, "bad_pages", index)
    if pages is None:
        return _unanswered(dev, "retired_memory", why)
    pending = [p for p in pages if isinstance(p, dict) and str(p.get("status", "")).lower().endswith("pending")]
    if pending or len(pages) >= nh.RETIRED_PAGES_LIMIT:
        what = f"{len(pending)} bad page(s) pending retirement: reset the GPU" if pending else f"{len(pages)} bad pages"
        return finding(f"{dev}.retired_memory", dev, FAIL, what, measured=len(pages), expected=0, source=CONFIG)
    return finding(f"{dev}.retired_memory", dev, WARN if pages else PASS, f"{len(pages)} retired (bad) page(s)",
                   measured=len(pages), expected=0, source=CONFIG)


def pcie_finding(adapter, index: int, dev: str) -> HealthFinding:
    info, why = _ask(adapter, "pcie_info", index)
    if info is None:
        return _unanswered(dev, "pcie_link", why)
    static, metric = info.get("pcie_static", {}), info.get("pcie_metric", {})
    props = {"pcie_generation_current": SPEED_TO_GEN.get(metric.get("pcie_speed")),
             "pcie_generation_max": SPEED_TO_GEN.get(static.get("max_pcie_speed")),
             "pcie_width_current_lanes": metric.get("pcie_width"), "pcie_width_max_lanes": static.get("max_pcie_width")}
    return nh.pcie_finding(nh.Asker(None, index, dev), props, loaded=False)


def throttle_finding(adapter, index: int, dev: str) -> HealthFinding:
    status, why = _ask(adapter, "throttle_status", index)
    if status is None:
        return _unanswered(dev, "throttle", why)
    if status:
        return finding(f"{dev}.throttle", dev, FAIL, f"the GPU reports throttling at idle (throttle_status "
                       f"{status:#x}): cooling or power", measured=status, expected=0, source=CONFIG)
    return finding(f"{dev}.throttle", dev, PASS, "not throttled", measured=0, expected=0, source=CONFIG)


def amd_findings(devices: list, adapter=None) -> list[HealthFinding]:
    """Every AMD GPU of the inventory (`rocm:N` in PCI order, the adapter's order too)."""
    if not devices:
        return []
    if adapter is None:
        try:
            adapter = load()
        except (ImportError, OSError) as exc:
            return [finding(f"{d.id}.amdsmi", d.id, SKIP, f"amdsmi not usable ({exc}): pip install accelbench[amd]")
                    for d in devices]
    started = call_within(adapter.init, CALL_LIMIT_S)
    if not started.ok:
        why, kind = ("did not answer", HUNG) if started.timed_out else (str(started.error), CALL_FAILED)
        return [finding(f"{d.id}.amdsmi", d.id, FAIL, f"amdsmi init: {why}", source=CONFIG, unanswered=kind)
                for d in devices]
    found: list[HealthFinding] = []
    for index, device in enumerate(devices):
        for check in (ecc_finding, bad_pages_finding, pcie_finding, throttle_finding):
            found.append(check(adapter, index, device.id))
            if found[-1].unanswered == HUNG:
                break  # the driver is stuck: the remaining calls would hang too
    return found
