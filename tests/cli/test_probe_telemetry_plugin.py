"""A third party adds a device probe and a telemetry source the way the built-ins are added: through
the `accelbench.probes` and `accelbench.telemetry` entry points.

The package is written into a temporary folder with its own .dist-info (what `pip install` leaves),
put on PYTHONPATH, and the real CLI is run in a subprocess: `accelbench info` must list the probe's
device, and `accelbench monitor` must read that device through the third party's source.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from plugin_site import install, run_cli

PLUGIN = '''
"""A made-up "quantum" accelerator: one device, a probe that finds it, a source that watches it."""
from accelbench.devices.model import Device
from accelbench.telemetry.model import DeviceInfo, Sample, Source


def probe():
    return [Device(id="quantum:0", kind="accelerator", vendor="Qubitco", name="Qubitco Q1", source="qctl")]


class QuantumSource(Source):
    name = "qctl"
    vendor = "Qubitco"
    families = ("quantum",)

    @classmethod
    def for_devices(cls, wanted):
        source = cls()
        source.wanted = wanted
        return source

    def open(self, now_s):
        self.devices = {"quantum:0": DeviceInfo("quantum:0", self.name, name="Qubitco Q1",
                                                metrics=("temperature_c",))}
        self.polls = 0

    def poll(self, now_s):
        self.polls += 1
        return [Sample("quantum:0", now_s, {"temperature_c": 0.015 + self.polls})]
'''

ENTRY_POINTS = """[accelbench.probes]
quantum = thirdparty_quantum:probe

[accelbench.telemetry]
qctl = thirdparty_quantum:QuantumSource
"""


@pytest.fixture()
def plugin_path(tmp_path: Path) -> Path:
    return install(tmp_path / "site", "thirdparty_quantum", PLUGIN, ENTRY_POINTS)


def _cli(plugin_path: Path, *args: str):
    return run_cli(plugin_path, *args, timeout_s=300)


def test_a_third_party_probe_is_run_by_default_and_named(plugin_path):
    listed = _cli(plugin_path, "info", "--json", "--probe", "quantum")
    assert listed.returncode == 0, listed.stderr
    document = json.loads(listed.stdout)
    assert [(d["id"], d["vendor"]) for d in document["devices"]] == [("quantum:0", "Qubitco")]

    default = _cli(plugin_path, "info", "--json")
    assert default.returncode == 0, default.stderr
    probes = [p["probe"] for p in json.loads(default.stdout)["probes"]]
    assert "quantum" in probes and probes.index("quantum") > probes.index("cpu")
    assert "torch" not in probes  # the framework probes still run only when asked for


def test_a_third_party_telemetry_source_watches_its_device(plugin_path):
    watched = _cli(plugin_path, "monitor", "--device", "quantum:0", "--once", "--interval", "0.05", "--json")
    assert watched.returncode == 0, watched.stdout + watched.stderr
    lines = [json.loads(line) for line in watched.stdout.splitlines() if line.strip()]
    readings = json.dumps(lines)
    assert "quantum:0" in readings and "temperature_c" in readings
    assert "no telemetry source knows" not in watched.stdout + watched.stderr


def test_without_the_package_nothing_watches_that_family():
    from accelbench.telemetry.sources import unwatched

    (said,) = unwatched(["quantum:0"])
    assert "no telemetry source knows 'quantum' devices" in said.reason
