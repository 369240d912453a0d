"""What backends over an array framework share, outside the contract (backends/base.py): importing the
framework on first use, and the ops written once against an array namespace. The framework's arrays
are typed Any here, inside the implementation; the contract itself names them DeviceArray."""
from __future__ import annotations

import os
from typing import Any

from accelbench.backends.base import Backend


class LazyFramework:
    """For backends over a framework imported on first use (or injected, for tests with fakes).

    Subclasses set `framework` (the import name), `install_hint`, and `framework_packages` (other
    modules whose absence also means "not installed"), and call `_init_framework(module)`.
    """

    framework: str = ""
    framework_packages: tuple[str, ...] = ()
    install_hint: str = ""

    def _init_framework(self, module: Any = None) -> None:
        self._module: Any = module
        self._failure: str | None = None
        self._import_tried = False

    def _load_framework(self) -> Any:
        if self._module is None:
            # before CUDA initialises, so the framework numbers GPUs in PCI bus order like NVML
            os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
            self._module = __import__(self.framework)
        return self._module

    def _import_failure(self) -> str | None:
        """Why the framework cannot be imported (None: it can); tried once, then remembered."""
        if not self._import_tried:
            self._failure, self._import_tried = self._try_import(), True
        return self._failure

    def _try_import(self) -> str | None:
        try:
            self._load_framework()
        except ModuleNotFoundError as error:
            if error.name in (self.framework, *self.framework_packages):
                return f"{error.name} is not installed: {self.install_hint}"
            return f"{self.framework} failed to import: {error}"
        except Exception as error:  # noqa: BLE001 - a broken install (missing .so, ABI clash, other CUDA)
            return f"{self.framework} failed to import: {type(error).__name__}: {error}"
        return None


class ArrayNamespaceOps(Backend):
    """The ops written once against an array namespace (numpy, torch, cupy); subclasses give `xp`."""

    def _xp(self, array: Any) -> Any:
        raise NotImplementedError

    def matmul(self, a: Any, b: Any, out: Any = None) -> Any:
        xp = self._xp(a)
        return xp.matmul(a, b, out=out) if out is not None else xp.matmul(a, b)

    def copy(self, a: Any, out: Any) -> Any:
        out[...] = a
        return out

    def scale(self, a: Any, scalar: float, out: Any) -> Any:
        return self._xp(a).multiply(a, scalar, out=out)

    def add(self, a: Any, b: Any, out: Any) -> Any:
        return self._xp(a).add(a, b, out=out)

    def triad(self, a: Any, b: Any, scalar: float, out: Any) -> Any:
        xp = self._xp(a)
        xp.multiply(b, scalar, out=out)
        return xp.add(out, a, out=out)

    def total(self, a: Any) -> Any:
        return self._xp(a).sum(a)

    def elementwise(self, a: Any, out: Any) -> Any:
        xp = self._xp(a)
        xp.multiply(a, a, out=out)
        return xp.add(out, a, out=out)
