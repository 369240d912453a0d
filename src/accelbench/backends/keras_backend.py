"""Keras 3 on one of its backends: `keras-torch`, `keras-jax` (`keras-<KERAS_BACKEND>`).

Keras fixes its backend when it is first imported (the KERAS_BACKEND variable), so one process
holds one Keras backend: the first keras-* backend used imports Keras on its framework, and any
other keras-* asked for in the same process is refused with the reason (run it in its own
`accelbench run`). Arrays, devices and synchronisation are the underlying framework's: each
keras-* backend hands them to accelbench's own backend for that framework (torch, jax), so the
placement of the tensors Keras computes on is read from those tensors, never taken from Keras.

Keras backends run only the deep-learning workloads (their models are written in Keras); they
are used only where named (`--backend keras-torch`), never by a run that names no backend,
since importing Keras takes seconds and pins the process to one Keras backend.
"""
from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import sys
from typing import Any, Iterator

import numpy as np

from accelbench.backends.base import Availability, Backend
from accelbench.errors import Unsupported

INSTALL_HINT = "pip install 'accelbench[keras]' (keras 3)"
KERAS_MAJOR = 3


def loaded_keras_backend() -> str | None:
    """The backend of the Keras already imported in this process (None: Keras is not loaded)."""
    keras = sys.modules.get("keras")
    if keras is None:
        return None
    try:
        return str(keras.backend.backend())
    except Exception:  # noqa: BLE001 - a half-imported or foreign "keras" module
        return os.environ.get("KERAS_BACKEND", "unknown")


class KerasBackend(Backend):
    """Keras 3 over `keras_backend`; arrays handled by accelbench's `inner_name` backend."""

    keras_backend: str = ""
    inner_name: str = ""
    #: used only where named: see the module's docstring
    selected_only = True

    def __init__(self) -> None:
        self._keras: Any = None

    # -- the framework underneath ----------------------------------------------------------------
    def inner(self) -> Backend:
        from accelbench.backends.registry import get_backend

        return get_backend(self.inner_name)

    @property
    def asynchronous(self) -> bool:  # type: ignore[override]
        return self.inner().asynchronous

    def _keras_problem(self) -> str | None:
        if "keras" not in sys.modules and importlib.util.find_spec("keras") is None:
            return f"keras is not installed: {INSTALL_HINT}"
        try:
            version = importlib.metadata.version("keras")
        except importlib.metadata.PackageNotFoundError:
            version = "0"
        if not version.split(".")[0].isdigit() or int(version.split(".")[0]) < KERAS_MAJOR:
            return f"keras {version} is installed; the Keras workloads need Keras 3: {INSTALL_HINT}"
        loaded = loaded_keras_backend()
        if loaded is not None and loaded != self.keras_backend:
            return (f"Keras is already loaded on {loaded} in this process, and Keras holds one backend per "
                    f"process: run {self.name} in an `accelbench run` of its own")
        return None

    def availability(self) -> Availability:
        problem = self._keras_problem()
        if problem:
            return Availability(False, problem)
        inner = self.inner().availability()
        if not inner.ok:
            return Availability(False, f"Keras's {self.keras_backend} backend needs {self.inner_name}: {inner.reason}")
        return Availability(True, inner.reason)

    def keras(self) -> Any:
        """The keras module on this backend, imported now if it is not yet (Unsupported where it cannot be)."""
        if self._keras is None:
            problem = self._keras_problem()
            if problem:
                raise Unsupported(problem)
            if "keras" not in sys.modules:
                os.environ["KERAS_BACKEND"] = self.keras_backend
                self.before_import()
            import keras

            self._keras = keras
        return self._keras

    def before_import(self) -> None:
        """Settings the framework must have before Keras starts on it."""

    def keras_device(self, device: str) -> str:
        """Keras's name for accelbench's `device` (what `keras.device()` takes)."""
        return device

    @contextlib.contextmanager
    def on_device(self, device: str) -> Iterator[None]:
        """Keras creates variables and computes on `device` inside this block."""
        with self.keras().device(self.keras_device(device)):
            yield

    def native(self, value: Any) -> Any:
        """The framework's tensor behind a Keras variable (any other value as it is)."""
        return getattr(value, "value", value)

    def describe(self, device: str) -> dict[str, str]:
        """What each result's spec records: the Keras backend and the device Keras was told to use."""
        keras = self.keras()
        return {"keras_version": str(keras.__version__), "keras_backend": str(keras.backend.backend()),
                "keras_device": self.keras_device(device)}

    # -- discovery, delegated ----------------------------------------------------------------------
    def device_ids(self) -> list[str]:
        return self.inner().device_ids() if self.availability().ok else []

    def dtypes(self, device: str) -> tuple[str, ...]:
        # the Keras workloads compute in float32; float64, where the framework has it, is the replay's
        return tuple(d for d in ("float64", "float32") if d in self.inner().dtypes(device))

    def versions(self) -> dict[str, str]:
        found = dict(self.inner().versions())
        try:
            found["keras"] = importlib.metadata.version("keras")
        except importlib.metadata.PackageNotFoundError:
            pass
        return found

    # -- arrays, delegated to the framework underneath ---------------------------------------------
    def from_host(self, array: np.ndarray, device: str, pinned: bool = False) -> Any:
        return self.inner().from_host(array, device, pinned)

    def to_host(self, array: Any) -> np.ndarray:
        return self.inner().to_host(self.native(array))

    def host_buffer(self, shape: tuple[int, ...], dtype: str, pinned: bool = False) -> Any:
        return self.inner().host_buffer(shape, dtype, pinned)

    def supports_pinned(self, device: str) -> bool:
        return self.inner().supports_pinned(device)

    def location(self, array: Any) -> str:
        return self.inner().location(self.native(array))

    def synchronize(self, device: str) -> None:
        self.inner().synchronize(device)

    def wait_for(self, output: Any) -> None:
        self.inner().wait_for(output)

    def fill_nan(self, array: Any) -> bool:
        return self.inner().fill_nan(array)

    def namespace(self, device: str) -> Any:
        return self.inner().namespace(device)

    def random(self, shape: tuple[int, ...], dtype: str, device: str, seed: int) -> Any:
        return self.inner().random(shape, dtype, device, seed)

    def empty(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        return self.inner().empty(shape, dtype, device)

    def astype(self, array: Any, dtype: str) -> Any:
        return self.inner().astype(array, dtype)

    def shares_host_memory(self, device: str) -> bool:
        return self.inner().shares_host_memory(device)

    def matmul(self, a: Any, b: Any, out: Any = None) -> Any:
        return self.inner().matmul(a, b, out)

    def threads(self, count: int | None) -> contextlib.AbstractContextManager[int | None]:  # type: ignore[override]
        return self.inner().threads(count)


class KerasTorchBackend(KerasBackend):
    name = "keras-torch"
    keras_backend, inner_name = "torch", "torch"
    #: Keras runs torch steps eagerly (no compiled graph): the check can watch each Dropout layer
    eager_steps = True

    def keras_device(self, device: str) -> str:
        return "cuda:" + device.split(":")[1] if device.startswith("rocm:") else device  # torch calls ROCm cuda


class KerasJaxBackend(KerasBackend):
    name = "keras-jax"
    keras_backend, inner_name = "jax", "jax"

    def before_import(self) -> None:
        # float64 exists in JAX only with x64 on, and the check replays training in float64;
        # Keras sets every float32 model's dtypes itself, so float32 work is unchanged. On GPUs
        # JAX's default matmul precision is TF32, which is not float32: "highest" is.
        import jax

        jax.config.update("jax_enable_x64", True)
        jax.config.update("jax_default_matmul_precision", "highest")

    def keras_device(self, device: str) -> str:
        if device == "cpu":
            return "cpu:0"
        kind, index = device.split(":")[0], device.split(":")[-1]
        return f"gpu:{index}" if kind in ("cuda", "rocm") else device

