"""Which framework reaches which inventory device is the backends' answer, not the probes'."""
from dataclasses import replace

from accelbench.backends.device_reach import with_backend_reach
from accelbench.devices import apple, cpu, frameworks
from fakes import HostArrayBackend

APPLE_SILICON = ("Darwin", "arm64")
M1 = {"machdep.cpu.brand_string": "Apple M1", "hw.memsize": str(16 * 1024 ** 3)}.__getitem__


def apple_gpu():
    (gpu,) = apple.probe(sysctl=M1, platform_info=APPLE_SILICON)
    return gpu


def test_the_apple_probe_names_no_framework(monkeypatch):
    monkeypatch.setattr(frameworks, "installed", lambda name: True)
    assert apple_gpu().reach == {}


def test_reach_follows_torch(monkeypatch):
    monkeypatch.setattr(frameworks, "installed", lambda name: name == "torch")
    (gpu,) = with_backend_reach([apple_gpu()])
    assert gpu.reach == {"torch": "mps"}
    monkeypatch.setattr(frameworks, "installed", lambda name: False)
    (gpu,) = with_backend_reach([apple_gpu()])
    assert gpu.reach == {}


def test_jax_reaches_the_apple_gpu_through_jax_metal(monkeypatch):
    monkeypatch.setattr(frameworks, "installed", lambda name: name in ("torch", "jax_plugins.metal_plugin"))
    (gpu,) = with_backend_reach([apple_gpu()])
    assert gpu.reach == {"torch": "mps", "jax": "METAL:0"}


class _MlxLike(HostArrayBackend):
    """A third party's backend: it answers for the devices it reaches, and no probe changes."""

    name = "mlx"

    def reach_id(self, device):
        return "gpu" if device.id == "mps" else None


class _Broken(HostArrayBackend):
    name = "broken"

    def reach_id(self, device):
        raise RuntimeError("a plugin that cannot answer")


def test_a_new_backend_answers_for_itself_and_a_broken_one_reaches_nothing():
    (gpu,) = with_backend_reach([apple_gpu()], backends=[_MlxLike(), _Broken()])
    assert gpu.reach == {"mlx": "gpu"}


def test_what_the_probe_knows_wins(monkeypatch):
    monkeypatch.setattr(frameworks, "installed", lambda name: name == "torch")
    probed = replace(apple_gpu(), reach={"torch": "mps:0"})
    (gpu,) = with_backend_reach([probed])
    assert gpu.reach == {"torch": "mps:0"}


def test_numpy_reaches_this_machines_cpu_and_torch_and_jax_where_installed(monkeypatch):
    (device,) = with_backend_reach(cpu.probe(measure_clock=False))
    assert device.reach["numpy"] == "cpu"
    monkeypatch.setattr(frameworks, "installed", lambda name: name in ("torch", "jax"))
    (device,) = with_backend_reach(cpu.probe(measure_clock=False))
    assert device.reach == {"numpy": "cpu", "torch": "cpu", "jax": "cpu:0"}
    monkeypatch.setattr(frameworks, "installed", lambda name: False)
    (device,) = with_backend_reach(cpu.probe(measure_clock=False))
    assert device.reach == {"numpy": "cpu"}
