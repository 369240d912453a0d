"""accelbench check's GPU checks on recorded NVML and amdsmi replays, and a GPU that hangs."""
from __future__ import annotations

import json
import time
from pathlib import Path

from accelbench.devices import amd, nvidia
from accelbench.devices.nvml_adapter import RecordedNvml
from accelbench.health import amd_health, gpu_checks, nvml_health
from accelbench.health.model import FAIL, PASS, WARN

DATA = Path(__file__).parent.parent / "data"


def _nvidia(name: str):
    recording = json.loads((DATA / "nvml" / f"{name}.json").read_text())
    devices = nvidia.probe(RecordedNvml(recording), environ={})
    return devices, nvml_health.RecordedHealthNvml(recording)


def _by_check(findings):
    return {f.check: f for f in findings}


def test_h200_replay_each_fault_fails_or_warns_with_its_cause(monkeypatch):
    monkeypatch.setattr(gpu_checks, "load_findings", lambda *a: [])  # no framework step in a replay
    devices, nvml = _nvidia("h200_health")
    found = _by_check(gpu_checks.nvidia_findings(devices, "quick", nvml))
    assert all(found[f"cuda:0.{c}"].status == PASS for c in ("ecc", "retired_memory", "pcie_link", "throttle",
                                                               "persistence"))
    assert found["cuda:1.pcie_link"].status == FAIL and "x8 of x16" in found["cuda:1.pcie_link"].summary
    assert found["cuda:2.pcie_link"].status == WARN and "gen 3 of gen 5" in found["cuda:2.pcie_link"].summary
    assert found["cuda:3.ecc"].status == FAIL and "2 uncorrected" in found["cuda:3.ecc"].summary
    assert found["cuda:3.retired_memory"].status == FAIL and "pending" in found["cuda:3.retired_memory"].summary
    assert found["cuda:3.throttle"].status == FAIL and "hw_thermal_slowdown" in found["cuda:3.throttle"].summary
    assert found["cuda:3.persistence"].status == WARN


def test_k40m_replay_retired_pages_and_sw_thermal(monkeypatch):
    monkeypatch.setattr(gpu_checks, "load_findings", lambda *a: [])
    devices, nvml = _nvidia("k40m_health")
    found = _by_check(gpu_checks.nvidia_findings(devices, "quick", nvml))
    retired = found["cuda:0.retired_memory"]
    assert retired.status == FAIL and "page retirement pending" in retired.summary
    assert found["cuda:0.ecc"].status == WARN and "3 uncorrected over the GPU's life" in found["cuda:0.ecc"].summary
    assert found["cuda:0.throttle"].status == WARN and "sw_thermal_slowdown" in found["cuda:0.throttle"].summary


def test_gen3_under_load_and_host_to_device_against_the_link_theory():
    devices, _ = _nvidia("h200_health")
    sampled = gpu_checks.Sampler(None, 0)
    sampled.mask, sampled.clocks, sampled.gens = 0x4, [1980], [3]
    result = {"pattern_bytes": 2**28, "pattern_errors": 3, "matmul_dtype": "bfloat16", "matmul_flop_s": 780e12,
              "d2d_bytes_s": 4.3e12, "h2d_bytes_s": 12e9}
    found = _by_check(gpu_checks.judge_load(devices[0], result, sampled, 5.0))
    assert found["cuda:0.memory_pattern"].status == FAIL
    assert found["cuda:0.pcie_link"].status == FAIL and "under load" in found["cuda:0.pcie_link"].summary
    h2d = found["cuda:0.host_to_device"]
    assert h2d.status == FAIL and h2d.source == "PCIe link theory" and h2d.expected == 16 * 3.938e9
    assert found["cuda:0.throttle"].status == PASS  # a power cap under load is the normal steady state
    assert found["cuda:0.memory_bandwidth"].status == PASS


class HangingNvml(nvml_health.RecordedHealthNvml):
    def ecc_errors(self, index, counter):
        time.sleep(3600)  # a GPU whose driver never answers


def test_a_gpu_that_hangs_is_a_failure_within_its_time_bound(monkeypatch):
    monkeypatch.setattr(nvml_health, "CALL_LIMIT_S", 0.5)
    monkeypatch.setattr(gpu_checks, "load_findings", lambda *a: [])
    recording = json.loads((DATA / "nvml" / "h200_health.json").read_text())
    recording["devices"] = recording["devices"][:1]
    devices = nvidia.probe(RecordedNvml(recording), environ={})
    start_s = time.monotonic()
    found = _by_check(gpu_checks.nvidia_findings(devices, "quick", HangingNvml(recording)))
    assert time.monotonic() - start_s < 3
    assert found["cuda:0.ecc"].status == FAIL and "did not answer within 0 s" in found["cuda:0.ecc"].summary
    assert all(f.status == FAIL for f in found.values() if f.check != "cuda:0.pcie_link")


def test_amd_replay_each_fault_fails_with_its_cause():
    recording = json.loads((DATA / "amd" / "mi250x_health.json").read_text())
    devices = amd.probe(amd.RecordedAmdsmi(recording), environ={})
    found = _by_check(amd_health.amd_findings(devices, amd_health.RecordedAmdHealth(recording)))
    assert all(found[f"rocm:0.{c}"].status == PASS for c in ("ecc", "retired_memory", "pcie_link", "throttle"))
    assert found["rocm:1.ecc"].status == FAIL and "5 uncorrected" in found["rocm:1.ecc"].summary
    assert found["rocm:2.pcie_link"].status == FAIL and "x8 of x16" in found["rocm:2.pcie_link"].summary
    assert found["rocm:3.retired_memory"].status == FAIL and "pending" in found["rocm:3.retired_memory"].summary
    assert found["rocm:3.throttle"].status == FAIL


class UnsupportedRetired(nvml_health.RecordedHealthNvml):
    """A GPU whose driver offers neither remapped rows nor retired pages (NVML: not supported)."""

    def retired_pages(self, index):
        from accelbench.devices.nvml_adapter import NvmlError
        raise NvmlError("not_supported")

    def remapped_rows(self, index):
        from accelbench.devices.nvml_adapter import NvmlError
        raise NvmlError("not_supported")


class HangingAmd(amd_health.RecordedAmdHealth):
    def ecc_count(self, index):
        time.sleep(3600)


def _reworded(monkeypatch) -> None:
    """Every reason a device call gave no answer reads backwards: a decision read from the words changes."""
    from accelbench.health import model

    made = model.Unanswered.__new__
    monkeypatch.setattr(model.Unanswered, "__new__",
                        staticmethod(lambda cls, text, kind: made(cls, str(text)[::-1], kind)))


def test_reworded_reasons_decide_the_same_a_hang_stops_the_checks_and_unsupported_is_a_skip(monkeypatch):
    """Issue 43: the checks read the kind of a non-answer (hung, not offered), never its text."""
    _reworded(monkeypatch)
    monkeypatch.setattr(nvml_health, "CALL_LIMIT_S", 0.5)
    monkeypatch.setattr(amd_health, "CALL_LIMIT_S", 0.5)
    monkeypatch.setattr(gpu_checks, "load_findings", lambda *a: [])
    recording = json.loads((DATA / "nvml" / "h200_health.json").read_text())
    recording["devices"] = recording["devices"][:1]
    devices = nvidia.probe(RecordedNvml(recording), environ={})
    hung = _by_check(gpu_checks.nvidia_findings(devices, "quick", HangingNvml(recording)))
    assert hung["cuda:0.ecc"].status == FAIL and "did not answer" not in hung["cuda:0.ecc"].summary  # reworded
    assert all(f.status == FAIL for f in hung.values() if f.check != "cuda:0.pcie_link")
    unsupported = _by_check(gpu_checks.nvidia_findings(devices, "quick", UnsupportedRetired(recording)))
    assert unsupported["cuda:0.retired_memory"].status == nvml_health.SKIP  # not offered: no fault
    assert unsupported["cuda:0.ecc"].status == PASS
    amd_recording = json.loads((DATA / "amd" / "mi250x_health.json").read_text())
    amd_devices = amd.probe(amd.RecordedAmdsmi(amd_recording), environ={})[:1]
    start_s = time.monotonic()
    found = amd_health.amd_findings(amd_devices, HangingAmd(amd_recording))
    assert time.monotonic() - start_s < 3
    assert [f.check for f in found] == ["rocm:0.ecc"] and found[0].status == FAIL  # the rest not asked
