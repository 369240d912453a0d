import subprocess

import pytest

from accelbench.devices import apple
from accelbench.devices.model import ERROR, NOT_SUPPORTED, OK
from accelbench.devices.probing import run_probe

GIB = 1024 ** 3


def sysctl_of(values):
    def read(name):
        if name not in values:
            raise subprocess.CalledProcessError(1, ["sysctl", "-n", name])
        return values[name]
    return read


M1 = sysctl_of({"machdep.cpu.brand_string": "Apple M1", "hw.memsize": str(16 * GIB)})


@pytest.mark.parametrize("platform_info", [("Linux", "x86_64"), ("Linux", "aarch64"), ("Windows", "AMD64")])
def test_not_supported_off_macos(platform_info):
    report = run_probe("apple", lambda: apple.probe(sysctl=M1, platform_info=platform_info))
    assert report.status == NOT_SUPPORTED
    assert report.message.startswith("Apple GPUs exist only on macOS on Apple silicon")


def test_not_supported_on_an_intel_mac():
    intel_mac = sysctl_of({"sysctl.proc_translated": "0", "machdep.cpu.brand_string": "Intel(R) Core(TM) i7-9750H"})
    report = run_probe("apple", lambda: apple.probe(sysctl=intel_mac, platform_info=("Darwin", "x86_64")))
    assert report.status == NOT_SUPPORTED


def test_m1_gpu():
    (gpu,) = apple.probe(sysctl=M1, platform_info=("Darwin", "arm64"))
    assert (gpu.id, gpu.kind, gpu.vendor, gpu.name) == ("mps", "gpu", "Apple", "Apple M1 GPU")
    assert gpu.memory_bytes == 16 * GIB
    assert gpu.properties["unified_memory"] is True and gpu.properties["chip_name"] == "Apple M1"
    fp32 = gpu.peak("fp32", "table")
    assert fp32.value == pytest.approx(2.6e12) and "Apple" in fp32.detail and "8-core" in fp32.detail
    assert all(p.provenance == "table" for p in gpu.peaks)


def test_pro_chip_gets_no_base_chip_figures():
    pro = sysctl_of({"machdep.cpu.brand_string": "Apple M1 Pro", "hw.memsize": str(32 * GIB)})
    (gpu,) = apple.probe(sysctl=pro, platform_info=("Darwin", "arm64"))
    assert gpu.name == "Apple M1 Pro GPU" and gpu.peaks == ()


def test_rosetta_still_finds_the_gpu_and_warns():
    translated = sysctl_of({"sysctl.proc_translated": "1", "machdep.cpu.brand_string": "Apple M2",
                            "hw.memsize": str(8 * GIB)})
    (gpu,) = apple.probe(sysctl=translated, platform_info=("Darwin", "x86_64"))
    assert gpu.name == "Apple M2 GPU" and any("Rosetta" in w for w in gpu.warnings)


def test_sysctl_failure_is_an_error():
    broken = sysctl_of({})
    report = run_probe("apple", lambda: apple.probe(sysctl=broken, platform_info=("Darwin", "arm64")))
    assert report.status == ERROR and "sysctl" in report.message


def test_status_ok_on_apple_silicon():
    assert run_probe("apple", lambda: apple.probe(sysctl=M1, platform_info=("Darwin", "arm64"))).status == OK


def test_run_sysctl_calls_sysctl_n(monkeypatch):
    seen = {}

    def fake_run(args, **kwargs):
        seen["args"] = args
        return subprocess.CompletedProcess(args, 0, stdout="Apple M3\n", stderr="")

    monkeypatch.setattr(subprocess, "run", fake_run)
    assert apple.run_sysctl("machdep.cpu.brand_string") == "Apple M3"
    assert seen["args"] == ["sysctl", "-n", "machdep.cpu.brand_string"]
