"""A probe that loads a driver's native library runs in a child process (devices/isolated.py): its
abort, crash or hang is the probe's reason, and `accelbench info` goes on (issue #27 item 4)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_site import install, run_cli

from accelbench.devices import isolated
from accelbench.devices.model import NO_DRIVER
from accelbench.devices.probing import ProbeFailure, run_probe

PLUGIN = '''
"""Made-up driver probes: one that finds a device, and natives that abort, crash, hang or refuse."""
import os
import time

from accelbench.devices.model import Device
from accelbench.devices.probing import ProbeFailure

NATIVE = True


def needs_isolation():
    return True


def finds():
    return [Device(id="fake:0", kind="gpu", vendor="Fakeco", name="Fake 1", source="fakectl",
                   properties={"pid": os.getpid()})]


def aborts():
    os.abort()  # what an assertion in a driver library does to its process


def crashes():
    import ctypes
    ctypes.string_at(0)  # a segfault


def hangs():
    time.sleep(30)


def refuses():
    raise ProbeFailure("no_driver", "no Fakeco driver")
'''


@pytest.fixture()
def site(tmp_path: Path, monkeypatch) -> Path:
    folder = install(tmp_path / "site", "fake_native", PLUGIN, "[accelbench.probes]\nfakenative = fake_native:aborts\n")
    monkeypatch.syspath_prepend(str(folder))
    return folder


@pytest.mark.parametrize("function, signal_name", [("aborts", "SIGABRT"), ("crashes", "SIGSEGV")])
def test_a_probe_that_ends_its_process_is_a_reason_not_the_end_of_the_command(site, function, signal_name):
    report = run_probe("fakenative", lambda: isolated.probe_in_child("fakenative", f"fake_native:{function}"))
    assert report.status == "error" and not report.devices
    assert report.message.startswith("the fakenative probe aborted") and signal_name in report.message


def test_a_hung_probe_is_ended_at_its_time_limit(site):
    with pytest.raises(ProbeFailure, match="did not answer within 2 s"):
        isolated.probe_in_child("fakenative", "fake_native:hangs", timeout_s=2)


def test_the_child_returns_the_devices_and_the_probes_own_status(site):
    import os

    (device,) = isolated.probe_in_child("fakenative", "fake_native:finds")
    assert device.id == "fake:0" and device.name == "Fake 1"
    assert device.properties["pid"] != os.getpid()  # probed in another process
    with pytest.raises(ProbeFailure) as refused:
        isolated.probe_in_child("fakenative", "fake_native:refuses")
    assert refused.value.status == NO_DRIVER and refused.value.message == "no Fakeco driver"


def test_a_probe_without_native_code_or_without_a_driver_here_runs_in_this_process():
    class Plain:
        pass

    class NoDriver:
        NATIVE = True

        @staticmethod
        def needs_isolation():
            return False

    class Unsure:
        NATIVE = True

        @staticmethod
        def needs_isolation():
            raise OSError("cannot tell")

    assert not isolated.wants_child(Plain) and not isolated.wants_child(NoDriver)
    assert isolated.wants_child(Unsure)  # unsure: the child's cost is a second, an abort's the command


@pytest.mark.slow
def test_info_goes_on_when_a_native_probe_aborts(site):
    done = run_cli(site, "info", "--probe", "cpu,fakenative", "--json", "--db", str(site / "none.sqlite"), timeout_s=120)
    assert done.returncode == 0, done.stderr
    probes = {p["probe"]: p for p in json.loads(done.stdout)["probes"]}
    assert probes["cpu"]["status"] == "ok"
    assert probes["fakenative"]["status"] == "error" and "aborted" in probes["fakenative"]["message"]
