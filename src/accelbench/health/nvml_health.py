"""NVIDIA GPU health through NVML: ECC errors, retired and remapped memory, the PCIe link, clocks
and throttle reasons, persistence mode.

The calls extend the telemetry adapter (telemetry.nvml_calls, itself on devices.nvml_adapter);
`RecordedHealthNvml` replays recordings with these extra fields per device:
    "ecc_errors": {"volatile": [corrected, uncorrected], "aggregate": [corrected, uncorrected]},
    "retired_pages": [single_bit, double_bit, pending], "remapped_rows": [corrected, uncorrected,
    pending, failed], "persistence_mode": true, "throttle_reasons": 64, "sm_clock_mhz": 1980
Every call runs under a deadline (health.bounded): a GPU whose driver hangs is a FAIL naming the call.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from accelbench.devices.nvml_adapter import NOT_OFFERED, NvmlError
from accelbench.health.bounded import call_within
from accelbench.health.model import (CALL_FAILED, CONFIG, FAIL, HUNG, PASS, SKIP, UNSUPPORTED, WARN, HealthFinding,
                                     Unanswered, finding)
from accelbench.telemetry.nvml import THROTTLE_BITS
from accelbench.telemetry.nvml_calls import PynvmlTelemetry, RecordedTelemetryNvml

CALL_LIMIT_S = 5.0
FAULT_THROTTLES = ("hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown")
RETIRED_PAGES_LIMIT = 60     # boards retire at most 64 pages: near it the GPU must be replaced
CORRECTED_ECC_WARN = 1000    # volatile corrected errors beyond which a page is likely failing


class PynvmlHealth(PynvmlTelemetry):
    """The real NVML with the health calls."""

    def ecc_errors(self, index: int, counter: str) -> tuple[int, int]:
        nv = self._nv
        kind = {"volatile": nv.NVML_VOLATILE_ECC, "aggregate": nv.NVML_AGGREGATE_ECC}[counter]
        return (int(self._device_call("nvmlDeviceGetTotalEccErrors", index, nv.NVML_MEMORY_ERROR_TYPE_CORRECTED, kind)),
                int(self._device_call("nvmlDeviceGetTotalEccErrors", index, nv.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, kind)))

    def retired_pages(self, index: int) -> tuple[int, int, bool]:
        nv = self._nv
        single = self._device_call("nvmlDeviceGetRetiredPages", index, nv.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS)
        double = self._device_call("nvmlDeviceGetRetiredPages", index, nv.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR)
        pending = self._device_call("nvmlDeviceGetRetiredPagesPendingStatus", index)
        return len(single), len(double), bool(pending)

    def remapped_rows(self, index: int) -> tuple[int, int, bool, bool]:
        corrected, uncorrected, pending, failed = self._device_call("nvmlDeviceGetRemappedRows", index)
        return int(corrected), int(uncorrected), bool(pending), bool(failed)

    def persistence_mode(self, index: int) -> bool:
        return int(self._device_call("nvmlDeviceGetPersistenceMode", index)) == 1


class RecordedHealthNvml(RecordedTelemetryNvml):
    def __init__(self, recording: dict[str, Any], clock: Callable[[], float] = time.monotonic):
        super().__init__(recording, clock)

    def ecc_errors(self, index: int, counter: str) -> tuple[int, int]:
        corrected, uncorrected = self._device(index, "ecc_errors")[counter]
        return int(corrected), int(uncorrected)

    def retired_pages(self, index: int) -> tuple[int, int, bool]:
        single, double, pending = self._device(index, "retired_pages")
        return int(single), int(double), bool(pending)

    def remapped_rows(self, index: int) -> tuple[int, int, bool, bool]:
        corrected, uncorrected, pending, failed = self._device(index, "remapped_rows")
        return int(corrected), int(uncorrected), bool(pending), bool(failed)

    def persistence_mode(self, index: int) -> bool:
        return bool(self._device(index, "persistence_mode"))


def load() -> PynvmlHealth:
    import pynvml  # lazily: only a check of an NVIDIA GPU pays for it

    return PynvmlHealth(pynvml)


class Asker:
    """NVML calls for one GPU, each bounded; a call that hangs stops the rest (the driver is stuck)."""

    def __init__(self, nvml, index: int, device_id: str, limit_s: float | None = None):
        self.nvml, self.index, self.device_id = nvml, index, device_id
        self.limit_s = CALL_LIMIT_S if limit_s is None else limit_s
        self.hung: str | None = None

    def ask(self, name: str, *args: Any) -> tuple[Any, str]:
        """(value, "") or (None, why not: an Unanswered)."""
        if self.hung:
            return None, Unanswered(f"skipped: NVML already hung on {self.hung}", HUNG)
        outcome = call_within(lambda: getattr(self.nvml, name)(self.index, *args), self.limit_s)
        if outcome.timed_out:
            self.hung = name
            return None, Unanswered(f"NVML {name} did not answer within {self.limit_s:.0f} s", HUNG)
        if isinstance(outcome.error, NvmlError):
            kind = UNSUPPORTED if outcome.error.code in NOT_OFFERED else CALL_FAILED
            return None, Unanswered(f"NVML {name}: {outcome.error.message} ({outcome.error.code})", kind)
        if outcome.error is not None:
            return None, Unanswered(f"NVML {name}: {type(outcome.error).__name__}: {outcome.error}", CALL_FAILED)
        return outcome.value, ""

    def unanswered(self, check: str, why: str) -> HealthFinding:
        kind = getattr(why, "kind", CALL_FAILED)
        quiet = kind == UNSUPPORTED
        return finding(f"{self.device_id}.{check}", self.device_id, SKIP if quiet and not self.hung else FAIL,
                       why if quiet else f"{why}: the GPU or its driver does not respond", source=CONFIG,
                       unanswered=kind)


def ecc_finding(a: Asker, ecc_enabled: bool | None) -> HealthFinding:
    counts = {}
    for counter in ("volatile", "aggregate"):
        value, why = a.ask("ecc_errors", counter)
        if value is None:
            return a.unanswered("ecc", why)
        counts[counter] = {"corrected": value[0], "uncorrected": value[1]}
    check, dev = f"{a.device_id}.ecc", a.device_id
    vol, agg = counts["volatile"], counts["aggregate"]
    if vol["uncorrected"]:
        return finding(check, dev, FAIL, f"{vol['uncorrected']} uncorrected ECC error(s) since the driver loaded: "
                       "results on this GPU cannot be trusted; drain it and reset the GPU", measured=counts,
                       expected=0, source=CONFIG)
    if agg["uncorrected"] or vol["corrected"] > CORRECTED_ECC_WARN:
        return finding(check, dev, WARN, f"ECC errors: {agg['uncorrected']} uncorrected over the GPU's life, "
                       f"{vol['corrected']} corrected since the driver loaded", measured=counts, expected=0, source=CONFIG)
    if ecc_enabled is False:
        return finding(check, dev, WARN, "ECC is off: memory errors go undetected", measured=counts, source=CONFIG)
    return finding(check, dev, PASS, "no uncorrected ECC errors", measured=counts, expected=0, source=CONFIG)


def retired_finding(a: Asker) -> HealthFinding:
    check, dev = f"{a.device_id}.retired_memory", a.device_id
    rows, why_rows = a.ask("remapped_rows")
    if rows is not None:  # Ampere and later remap rows instead of retiring pages
        corrected, uncorrected, pending, failed = rows
        measured = {"corrected_rows": corrected, "uncorrected_rows": uncorrected, "pending": pending, "failed": failed}
        if failed or pending:
            what = "a row remapping failed: replace the GPU" if failed else "a row remapping is pending: reset the GPU"
            return finding(check, dev, FAIL, what, measured=measured, expected=0, source=CONFIG)
        status = WARN if uncorrected else PASS
        return finding(check, dev, status, f"{uncorrected + corrected} remapped row(s)" + (
            " after uncorrectable errors" if uncorrected else ""), measured=measured, expected=0, source=CONFIG)
    pages, why_pages = a.ask("retired_pages")
    if pages is None:
        unsupported = getattr(why_pages, "kind", "") == UNSUPPORTED
        return a.unanswered("retired_memory", why_rows or why_pages if unsupported else why_pages)
    single, double, pending = pages
    measured = {"single_bit": single, "double_bit": double, "pending": pending}
    if pending or single + double >= RETIRED_PAGES_LIMIT:
        what = "page retirement pending: reset the GPU" if pending else f"{single + double} retired pages: near the limit"
        return finding(check, dev, FAIL, what, measured=measured, expected=0, source=CONFIG)
    status = WARN if single + double else PASS
    return finding(check, dev, status, f"{single + double} retired page(s) ({double} double-bit)",
                   measured=measured, expected=0, source=CONFIG)


def pcie_finding(a: Asker, props: dict, loaded: bool) -> HealthFinding:
    check, dev = f"{a.device_id}.pcie_link", a.device_id
    gen_now, gen_max = props.get("pcie_generation_current"), props.get("pcie_generation_max")
    width_now, width_max = props.get("pcie_width_current_lanes"), props.get("pcie_width_max_lanes")
    if gen_now is None or gen_max is None or width_now is None or width_max is None:
        return finding(check, dev, SKIP, "NVML did not report the PCIe link", source=CONFIG)
    measured, expected = f"gen {gen_now} x{width_now}", f"gen {gen_max} x{width_max}"
    if width_now < width_max:
        return finding(check, dev, FAIL, f"PCIe link x{width_now} of x{width_max}: half the lanes or fewer are "
                       "trained; reseat the card, check the riser or slot", measured=measured, expected=expected,
                       source=CONFIG)
    if gen_now < gen_max:
        why = ("under load" if loaded else "at idle (an idle GPU may lower its link to save power; no load "
               "step ran to confirm)")
        return finding(check, dev, FAIL if loaded else WARN, f"PCIe link gen {gen_now} of gen {gen_max} {why}",
                       measured=measured, expected=expected, source=CONFIG)
    return finding(check, dev, PASS, f"PCIe link {measured}", measured=measured, expected=expected, source=CONFIG)


def throttle_finding(a: Asker, mask: int | None, why: str, when: str) -> HealthFinding:
    check, dev = f"{a.device_id}.throttle", a.device_id
    if mask is None:
        return a.unanswered("throttle", why)
    names = [name for bit, name in THROTTLE_BITS.items() if mask & bit]
    faults = [n for n in names if n in FAULT_THROTTLES]
    if faults:
        return finding(check, dev, FAIL, f"clocks held down {when} by {', '.join(faults)}: cooling, power supply "
                       "or the board", measured=names, expected=[], source=CONFIG)
    if "sw_thermal_slowdown" in names:
        return finding(check, dev, WARN, f"clocks lowered {when} because the GPU is hot (sw_thermal_slowdown)",
                       measured=names, expected=[], source=CONFIG)
    return finding(check, dev, PASS, f"no thermal or hardware slowdown {when}" + (f" ({', '.join(names)})" if names else ""),
                   measured=names, expected=[], source=CONFIG)


def persistence_finding(a: Asker) -> HealthFinding:
    value, why = a.ask("persistence_mode")
    if value is None:
        return a.unanswered("persistence", why)
    return finding(f"{a.device_id}.persistence", a.device_id, PASS if value else WARN,
                   "persistence mode on" if value else "persistence mode off: each job pays the driver's start-up "
                   "and settings are lost between jobs (`nvidia-smi -pm 1`)", measured=bool(value), expected=True,
                   source=CONFIG)


def state_findings(nvml, device) -> list[HealthFinding]:
    """The idle checks of one GPU (`device` from the inventory)."""
    a = Asker(nvml, int(device.properties.get("nvml_index", 0)), device.id)
    found = [ecc_finding(a, device.properties.get("ecc_enabled")), retired_finding(a),
             pcie_finding(a, device.properties, loaded=False)]
    mask, why = a.ask("throttle_reasons")
    found += [throttle_finding(a, mask, why, "at idle"), persistence_finding(a)]
    return found


def start(nvml) -> str:
    """"" when NVML started, else why not (bounded: a hung driver must not hang the check)."""
    outcome = call_within(nvml.init, CALL_LIMIT_S)
    if outcome.timed_out:
        return f"NVML init did not answer within {CALL_LIMIT_S:.0f} s"
    return "" if outcome.ok else f"NVML init failed: {outcome.error}"
