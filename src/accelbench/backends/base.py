"""The contract every backend fulfils (the shared implementations a framework backend builds on are in
backends/framework_ops.py).

A backend puts data on a device, runs a small set of ops there, synchronises, and says where an
array really lives. The timing harness only ever calls `synchronize(device)`. Backends import
their framework inside their own module, loaded only when asked for.

Device ids are accelbench's ("cpu", "cuda:0", "mps", "opencl:0:0"), the same as `accelbench info`.
"""
from __future__ import annotations

import abc
import contextlib
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Iterator, TypeAlias

import numpy as np

from accelbench.backends.arrays import ArrayNamespace

if TYPE_CHECKING:
    from accelbench.devices.model import Device

DTYPES = ("float64", "float32", "float16", "bfloat16")
#: an array on a device, of the backend's own framework: opaque to accelbench, which hands it back to
#: the backend, or reads it only through code that checks its type first (raw_access, placement)
DeviceArray = object
#: an array in host memory: numpy's, of any dtype
#: (a string: only mypy reads it, so numpy versions whose scalar types take no parameter still import it)
HostArray: TypeAlias = "np.ndarray[tuple[int, ...], np.dtype[np.generic[object]]]"


@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""


class Backend(abc.ABC):
    """Base class; subclasses set `name` and override what their framework does differently.

    The abstract methods are the contract every backend keeps (REQUIRED_METHODS): mypy refuses to
    create a backend without them, and the registry refuses to load one (backends/registry.py),
    naming the plugin and what it lacks. The timed ops (matmul ... elementwise) and the kernel
    calls are capabilities: a backend without one is skipped for the workloads that need it.
    """

    name: str = ""
    #: True where kernels run asynchronously to the host (so timing without sync would be wrong)
    asynchronous: bool = False
    #: the kernel source a workload may bring for this backend ("opencl-c"), for kernel-only
    #: backends that offer build_kernel / launch / buffer; None where there is none
    kernel_language: str | None = None

    # -- discovery -------------------------------------------------------------------------
    @abc.abstractmethod
    def availability(self) -> Availability:
        raise NotImplementedError

    @abc.abstractmethod
    def device_ids(self) -> list[str]:
        """accelbench ids of the devices this backend reaches (empty when unavailable)."""
        raise NotImplementedError

    def dtypes(self, device: str) -> tuple[str, ...]:
        """The dtypes (from DTYPES) this backend computes in on `device`."""
        return ("float64", "float32")

    def versions(self) -> dict[str, str]:
        """Framework versions worth recording with every result."""
        return {}

    def reach_id(self, device: Device) -> str | None:
        """The id this backend knows inventory `device` (a devices.model.Device) by, where an
        installed package lets it reach the device; None where it does not. Judged from what is
        installed, never by importing the framework: `accelbench info` asks it of every device.
        backends/device_reach.py adds the answers to the inventory's `reach`."""
        return None

    def unreached_reason(self, device: Device) -> str | None:
        """Why this backend does not measure inventory `device` (a devices.model.Device), with the
        fix, in words a user acts on ("torch 2.13.0+cpu is a CPU-only build: install a CUDA build
        of torch"). None where it reaches the device or has nothing to do with devices of its kind.
        runner/reach.py asks every backend about every device that none of them reaches."""
        return None

    # -- data movement ---------------------------------------------------------------------
    @abc.abstractmethod
    def from_host(self, array: HostArray, device: str, pinned: bool = False) -> DeviceArray:
        raise NotImplementedError

    @abc.abstractmethod
    def to_host(self, array: DeviceArray) -> HostArray:
        raise NotImplementedError

    def host_buffer(self, shape: tuple[int, ...], dtype: str, pinned: bool = False) -> DeviceArray:
        """A host array to copy into and out of; pinned (page-locked) where the backend allows."""
        if pinned:
            raise NotImplementedError(f"{self.name} has no pinned host memory")
        return np.empty(shape, dtype=dtype)

    def supports_pinned(self, device: str) -> bool:
        return False

    @abc.abstractmethod
    def location(self, array: DeviceArray) -> str:
        """The accelbench id of the device `array` lives on."""
        raise NotImplementedError

    def observe_placement(self, array: object) -> str | None:
        """The accelbench id of the device `array` lives on, read from the array through its own
        framework, never from what this backend was asked; None where `array` is not of a type this
        backend's framework describes (the default: no observer, so placement is only claimed).
        backends/placement.py asks every known backend in turn, built-ins first; a plugin's own
        observer is asked and named, but its answer stays the plugin's word, as location() is."""
        return None

    def synchronize(self, device: str) -> None:
        """Block until all work queued on `device` has finished."""

    def wait_for(self, output: object) -> None:
        """Block until `output` (any array or nest of arrays a call returned) is computed.

        synchronize() covers what the backend's own ops queued; a user's function may produce
        arrays the backend never saw (jax), so the harness waits on the output too.
        """

    def fill_nan(self, array: DeviceArray) -> bool:
        """Overwrite `array` with NaN (False where it cannot be written: immutable or integer)."""
        try:
            array[...] = float("nan")  # type: ignore[index]  # any framework's array, or the except
        except Exception:  # noqa: BLE001 - immutable arrays (jax), integer dtypes, scalars
            return False
        return True

    # -- arrays on the device --------------------------------------------------------------
    def namespace(self, device: str) -> ModuleType | None:
        """The array namespace (numpy, torch, jax.numpy, cupy), or None for kernel-only backends."""
        return None

    def arrays(self, device: str) -> ArrayNamespace | None:
        """The namespace on `device` with the calls frameworks spell differently (array creation,
        casts, gathers, the framework's random generator); None for kernel-only backends. A backend
        whose framework spells them otherwise than numpy returns its own ArrayNamespace subclass."""
        return None if self.namespace(device) is None else ArrayNamespace(self, device)

    @abc.abstractmethod
    def random(self, shape: tuple[int, ...], dtype: str, device: str, seed: int) -> DeviceArray:
        """Uniform [-1, 1) random numbers made on the device (never zeros, never copied from host)."""
        raise NotImplementedError

    @abc.abstractmethod
    def empty(self, shape: tuple[int, ...], dtype: str, device: str) -> DeviceArray:
        raise NotImplementedError

    @abc.abstractmethod
    def astype(self, array: DeviceArray, dtype: str) -> DeviceArray:
        """A copy of `array` in `dtype` (one of DTYPES), on the same device."""
        raise NotImplementedError

    def shares_host_memory(self, device: str) -> bool:
        """True where the device computes on host memory (no copy in or out is needed)."""
        return device == "cpu"

    # -- ops the core workloads time (out= where the framework allows) -------------------------
    def matmul(self, a: DeviceArray, b: DeviceArray, out: DeviceArray | None = None) -> DeviceArray:
        raise NotImplementedError

    def copy(self, a: DeviceArray, out: DeviceArray) -> DeviceArray:
        raise NotImplementedError

    def scale(self, a: DeviceArray, scalar: float, out: DeviceArray) -> DeviceArray:
        raise NotImplementedError

    def add(self, a: DeviceArray, b: DeviceArray, out: DeviceArray) -> DeviceArray:
        raise NotImplementedError

    def triad(self, a: DeviceArray, b: DeviceArray, scalar: float, out: DeviceArray) -> DeviceArray:
        """out = a + scalar * b (STREAM triad)."""
        raise NotImplementedError

    def total(self, a: DeviceArray) -> DeviceArray:
        """Sum of all elements, left on the device."""
        raise NotImplementedError

    def elementwise(self, a: DeviceArray, out: DeviceArray) -> DeviceArray:
        """out = a * a + a: two flops per element read once and written once, memory-bound."""
        raise NotImplementedError

    # -- CPU threads -----------------------------------------------------------------------
    @contextlib.contextmanager
    def threads(self, count: int | None) -> Iterator[int | None]:
        """Run the block with `count` CPU threads (None: leave as is); yields the count in force."""
        yield count


REQUIRED_METHODS = tuple(sorted(Backend.__abstractmethods__))


def framework_of(array: object) -> str:
    """The top-level package of `array`'s type ("torch" for a torch.Tensor): which framework made it."""
    return type(array).__module__.split(".")[0]


def missing_methods(cls: object) -> tuple[str, ...]:
    """What a backend class lacks of the contract: every required method it leaves abstract (all of
    them for a class that is not a Backend at all); () for a complete one."""
    if not isinstance(cls, type) or not issubclass(cls, Backend):
        return REQUIRED_METHODS
    return tuple(sorted(getattr(cls, "__abstractmethods__", ())))
