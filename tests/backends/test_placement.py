"""Placement is read from the array by a backend's observer (Backend.observe_placement): the built-ins'
observers live on their backends (backends/placement.py holds no table of frameworks); a plugin may
bring one for its own array type, which is asked and named, but is its word: the placement of an
array accelbench cannot read itself stays claimed; an array no observer knows too."""
from __future__ import annotations

import numpy as np
import pytest

from accelbench.backends import registry
from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.backends.placement import observe, own_observer


class Parcel:
    """A plugin's own array type."""

    def __init__(self, home: str) -> None:
        self.home = home


class Courier(NumpyBackend):
    name = "courier"

    def observe_placement(self, array: object) -> str | None:
        if not isinstance(array, Parcel):
            return None
        if array.home == "lost":
            raise LookupError("no label")
        return array.home


@pytest.fixture()
def clean_registry():
    registry.clear_cache()
    yield
    registry.clear_cache()


def test_the_builtin_observers_read_their_frameworks_arrays():
    assert observe(np.zeros(3)).device == "cpu"
    assert observe(np.float32(1.0)).how == "observed from a numpy array"


def test_torch_and_jax_arrays_are_observed_by_their_backends():
    torch = pytest.importorskip("torch")
    assert observe(torch.zeros(2)).device == "cpu"
    jnp = pytest.importorskip("jax.numpy")
    assert observe(jnp.zeros(2)).device == "cpu"


def test_an_array_no_observer_knows_is_only_claimed(clean_registry):
    seen = observe(Parcel("cuda:0"))
    assert seen.device is None and "no backend's placement observer" in seen.how


def test_a_plugin_observer_is_asked_for_its_own_array_type_and_is_named_as_its_word(clean_registry):
    registry.register_backend("courier", Courier)
    said = observe(Parcel("cuda:1"))
    assert said.device is None and "only the courier backend's own observer" in said.how and "cuda:1" in said.how
    assert observe(np.zeros(2)).device == "cpu"  # the built-in observer reads numpy's arrays first
    lost = observe(Parcel("lost"))
    assert lost.device is None and "LookupError: no label" in lost.how


def test_the_backend_that_made_an_array_is_asked_even_when_not_registered(clean_registry):
    assert "it says mps" in observe(Parcel("mps"), Courier()).how


def test_an_observer_inherited_from_a_builtin_is_accelbenchs_own():
    class Inherits(NumpyBackend):
        name = "inherits"

    assert own_observer(NumpyBackend()) and own_observer(Inherits())
    assert not own_observer(Courier())


def _fake_array(module: str, **attributes):
    """An object whose type claims to come from `module`, as a GPU framework's array would here."""
    return type("FakeArray", (), {"__module__": module, **attributes})()


def test_gpu_arrays_are_named_as_accelbench_names_their_devices():
    pytest.importorskip("torch")  # the torch observer reads torch.version (HIP or CUDA)
    device = type("Device", (), {"type": "cuda", "index": 1})()
    assert observe(_fake_array("torch", device=device)).device == "cuda:1"
    gpu = type("JaxDevice", (), {"platform": "gpu", "id": 0, "local_hardware_id": 2})()
    assert observe(_fake_array("jaxlib.xla_extension", devices=lambda self: {gpu})).device == "cuda:2"
    both = _fake_array("jax", devices=lambda self: {gpu, object()})
    assert "spread over 2 devices" in observe(both).how
