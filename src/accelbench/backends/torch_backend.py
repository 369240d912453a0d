"""PyTorch on the CPU, NVIDIA (cuda:N) and AMD (rocm:N) GPUs, Apple (mps) and Intel (xpu:N) GPUs.

accelbench ids map onto torch devices: rocm:N is torch's cuda:N on a ROCm build, the rest keep
their names. torch is imported on first use, after CUDA_DEVICE_ORDER=PCI_BUS_ID is set, so
cuda:N here is the same GPU as NVML's (and nvidia-smi's) index N. The framework can be injected
(`TorchBackend(torch_module=fake)`) so the GPU paths' logic is tested without a GPU.
"""
from __future__ import annotations

import contextlib
import re
import sys
import warnings
from typing import Any, Callable, Iterator

import numpy as np

from accelbench.backends.base import Availability, framework_of
from accelbench.backends.framework_ops import ArrayNamespaceOps, LazyFramework
from accelbench.devices.cuda_arch import arch_list_supports, parse_capability, parse_cuda_target
from accelbench.errors import Unsupported, UsageError

INSTALL_HINT = "pip install accelbench[torch]"
_HOST_DTYPES = ("float64", "float32", "float16")  # what numpy can hold; bfloat16 it cannot
# accelbench device kinds whose kernels run asynchronously to the host
_ACCELERATOR_KINDS = ("cuda", "rocm", "mps", "xpu")
_BUILD_NAMES = {"cuda": "CUDA", "rocm": "ROCm", "mps": "macOS (MPS)", "xpu": "XPU"}
INSTALL_URL = "https://pytorch.org/get-started/locally/"
PREVIOUS_VERSIONS_URL = "https://pytorch.org/get-started/previous-versions/"


def split_id(device: str) -> tuple[str, int | None]:
    """"cuda:1" -> ("cuda", 1); "cpu" -> ("cpu", None)."""
    kind, _, index = device.partition(":")
    return kind, int(index) if index.isdigit() else None


def _safely(probe: Callable[[], Any], default: Any) -> Any:
    """A probe's answer, or `default` when the framework raises (a broken driver, an old build)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "CUDA initialization: Found no NVIDIA driver" etc.
            return probe()
    except Exception:  # noqa: BLE001 - discovery reports what it can and never raises
        return default


def bfloat16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """Raw bfloat16 values (as 16-bit integers) widened exactly to float32."""
    return (bits.astype(np.uint16).astype(np.uint32) << 16).view(np.float32)


class TorchBackend(LazyFramework, ArrayNamespaceOps):
    name = "torch"
    framework, install_hint = "torch", INSTALL_HINT
    #: cuda, rocm, mps and xpu queue kernels; the CPU does not (see is_asynchronous)
    asynchronous = True

    def __init__(self, torch_module: Any = None) -> None:
        self._init_framework(torch_module)
        self._devices: dict[str, Any] | None = None  # accelbench id -> torch.device
        self._unsupported: dict[str, str] = {}  # accelbench id -> why this build has no kernels for it
        self._availability: Availability | None = None

    # -- loading -------------------------------------------------------------------------------
    def _torch(self) -> Any:
        return self._load_framework()

    # -- discovery -------------------------------------------------------------------------------
    def availability(self) -> Availability:
        if self._availability is None:  # probing CUDA can take a while: once per process
            failure = self._import_failure()
            if failure:
                self._availability = Availability(False, failure)
            elif any(d != "cpu" for d in self._discover()):
                self._availability = Availability(True)
            else:
                self._availability = Availability(True, f"cpu only: {self.no_accelerator_reason()}")
        return self._availability

    def no_accelerator_reason(self) -> str:
        """Why torch reaches no GPU: a CPU-only build, or the CUDA/ROCm runtime's own complaint."""
        torch = self._torch()
        if torch.version.cuda is None and getattr(torch.version, "hip", None) is None:
            return f"torch {torch.__version__} is built without CUDA or ROCm"
        if self._unsupported:
            return "; ".join(f"{device}: {why}" for device, why in self._unsupported.items())
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.cuda.init()  # raises with the runtime's reason ("Found no NVIDIA driver ...")
        except Exception as error:  # noqa: BLE001
            return str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return "torch.cuda.device_count() is 0"

    def _gpu_kind(self) -> str:
        return "rocm" if getattr(self._torch().version, "hip", None) else "cuda"

    def _discover(self) -> dict[str, Any]:
        if self._devices is not None:
            return self._devices
        if self._import_failure():
            return {}
        torch = self._torch()
        found = {"cpu": torch.device("cpu")}
        if _safely(torch.cuda.is_available, False):
            kind = self._gpu_kind()
            for index in range(_safely(torch.cuda.device_count, 0)):
                capability = _safely(lambda: tuple(torch.cuda.get_device_capability(index)), None)  # called now
                why = self._capability_reason(capability) if kind == "cuda" and capability else None
                if why:  # torch lists it, but every kernel would fail with "no kernel image"
                    self._unsupported[f"{kind}:{index}"] = why
                    continue
                found[f"{kind}:{index}"] = torch.device("cuda", index)
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and _safely(mps.is_available, False):
            found["mps"] = torch.device("mps")
        xpu = getattr(torch, "xpu", None)
        if xpu is not None and _safely(xpu.is_available, False):
            for index in range(_safely(xpu.device_count, 0)):
                found[f"xpu:{index}"] = torch.device("xpu", index)
        self._devices = found
        return found

    def device_ids(self) -> list[str]:
        return list(self._discover())

    def _capability_reason(self, capability: tuple[int, int]) -> str | None:
        """Why this CUDA build has no kernels for a GPU of `capability` (None: it has, or cannot tell)."""
        torch = self._torch()
        arch_list = [str(a) for a in _safely(lambda: torch.cuda.get_arch_list(), None) or ()]
        targets = sorted((t for t in map(parse_cuda_target, arch_list) if t), key=lambda t: t[1])
        if not targets or arch_list_supports(arch_list, capability):
            return None
        version, have = torch.__version__, f"{arch_list[0]} … {arch_list[-1]}" if len(arch_list) > 1 else arch_list[0]
        cc = f"{capability[0]}.{capability[1]}"
        lowest = f"{targets[0][1][0]}.{targets[0][1][1]}"
        if capability < targets[0][1]:
            return (f"compute capability {cc} is below what the installed torch {version} supports ({lowest}; "
                    f"it is built for {have}): install a torch built for sm_{capability[0]}{capability[1]}, "
                    f"an older release ({PREVIOUS_VERSIONS_URL})")
        return (f"compute capability {cc} has no kernels in the installed torch {version} (built for {have}): "
                f"install a newer torch ({INSTALL_URL})")

    def reach_id(self, device) -> str | None:
        from accelbench.devices import frameworks

        if not frameworks.installed("torch"):
            return None
        if device.id in ("cpu", "mps"):
            return device.id
        index, build = device.visible_index, frameworks.torch_build()
        wanted = {"NVIDIA": "cuda", "AMD": "hip"}.get(device.vendor)
        return f"cuda:{index}" if index is not None and wanted and build.get(wanted) else None  # ROCm keeps "cuda"

    def unreached_reason(self, device) -> str | None:
        """Why torch does not measure inventory `device`, with the fix; None for ids it has nothing to do with."""
        kind, _ = split_id(device.id)
        if kind not in _ACCELERATOR_KINDS:
            return None
        failure = self._import_failure()
        if failure:
            return failure
        torch, wanted = self._torch(), _BUILD_NAMES[kind]
        version, built = torch.__version__, self._build_name()
        if kind in ("cuda", "rocm") and built != wanted:
            kind_of_build = "a CPU-only build" if built is None else f"a {built} build"
            return f"torch {version} is {kind_of_build}: install a {wanted} build of torch ({INSTALL_URL})"
        torch_id = device.reach.get("torch", device.id)
        if torch_id in self._discover() or device.id in self._discover():
            return None
        if torch_id in self._unsupported:
            return self._unsupported[torch_id]
        capability = parse_capability(device.properties.get("compute_capability"))
        why = self._capability_reason(capability) if kind == "cuda" and capability else None
        if why:
            return why
        return (f"torch {version} ({built or 'CPU-only'}) cannot use {device.id}: {self.no_accelerator_reason()}: "
                f"check the driver and *_VISIBLE_DEVICES, or install a {wanted} build of torch ({INSTALL_URL})")

    def _build_name(self) -> str | None:
        version = self._torch().version
        if version.cuda is not None:
            return "CUDA"
        return "ROCm" if getattr(version, "hip", None) else None

    def _device(self, device: str) -> Any:
        found = self._discover()
        if device not in found:
            raise UsageError(f"torch cannot reach {device!r}; reachable here: {', '.join(found) or 'none'}",
                             refused_devices=(device,))
        return found[device]

    def is_asynchronous(self, device: str) -> bool:
        return split_id(device)[0] in _ACCELERATOR_KINDS

    def dtypes(self, device: str) -> tuple[str, ...]:
        self._device(device)
        kind, index = split_id(device)
        torch = self._torch()
        if kind == "cpu":
            return self._cpu_dtypes()
        if kind == "cuda":
            capability = tuple(torch.cuda.get_device_capability(index))
            # fp16 arithmetic from sm_53; bf16 tensor cores from Ampere (sm_80), emulated before
            return ("float64", "float32") + (("float16",) if capability >= (5, 3) else ()) + (
                ("bfloat16",) if capability >= (8, 0) else ())
        if kind == "rocm":
            bf16 = _safely(torch.cuda.is_bf16_supported, False)
            return ("float64", "float32", "float16") + (("bfloat16",) if bf16 else ())
        if kind == "mps":
            # Metal has no float64; bfloat16 arrived with macOS 14
            newer = getattr(torch.backends.mps, "is_macos_or_newer", None)
            bf16 = bool(newer and _safely(lambda: newer(14, 0), False))
            return ("float32", "float16") + (("bfloat16",) if bf16 else ())
        return self._xpu_dtypes(index)

    def _cpu_dtypes(self) -> tuple[str, ...]:
        # float16 only where the CPU multiplies it natively (AMX-FP16): elsewhere torch's fp16
        # matmul is a scalar fallback ~300x slower than fp32, which would eat any time budget
        native_fp16 = any(_safely(getattr(self._torch().cpu, probe, lambda: False), False)
                          for probe in ("_is_amx_fp16_supported", "_is_avx512_fp16_supported"))
        return ("float64", "float32", "bfloat16") + (("float16",) if native_fp16 else ())

    def _xpu_dtypes(self, index: int | None) -> tuple[str, ...]:
        xpu = self._torch().xpu
        properties = _safely(lambda: xpu.get_device_properties(index), None)
        fp64 = bool(getattr(properties, "has_fp64", True))  # Arc GPUs lack it, Max GPUs have it
        bf16 = _safely(xpu.is_bf16_supported, False)
        return (("float64",) if fp64 else ()) + ("float32", "float16") + (("bfloat16",) if bf16 else ())

    def versions(self) -> dict[str, str]:
        if self._import_failure():
            return {}
        torch = self._torch()
        found = {"torch": str(torch.__version__)}
        for key, value in (("cuda", torch.version.cuda), ("hip", getattr(torch.version, "hip", None))):
            if value:
                found[key] = str(value)
        if "cuda" in found or "hip" in found:
            cudnn = _safely(torch.backends.cudnn.version, None)
            if cudnn:
                found["cudnn"] = str(cudnn)
        capability = _safely(torch.backends.cpu.get_cpu_capability, None)
        if capability:
            found["cpu_capability"] = str(capability)  # the SIMD level torch's CPU kernels use
        found["cpu_threads"] = str(_safely(torch.get_num_threads, ""))
        blas = re.search(r"BLAS_INFO=(\w+)", str(_safely(lambda: torch.__config__.show(), "")))
        if blas:
            found["torch_blas"] = blas.group(1)   # mkl on x86 wheels, open (OpenBLAS) on Arm: report/advice_blas.py
        return found

    # -- data movement -------------------------------------------------------------------------
    def supports_pinned(self, device: str) -> bool:
        return split_id(device)[0] in ("cuda", "rocm") and device in self._discover()

    def host_buffer(self, shape: tuple[int, ...], dtype: str, pinned: bool = False) -> Any:
        """A numpy array; with pinned=True its memory is page-locked by torch's host allocator."""
        if not pinned:
            return super().host_buffer(shape, dtype)
        if dtype not in _HOST_DTYPES:
            raise Unsupported(f"numpy cannot hold {dtype}: no host buffer for it")
        if not any(self.supports_pinned(d) for d in self._discover()):
            raise Unsupported("torch has pinned host memory only with a CUDA or ROCm GPU")
        torch = self._torch()
        return torch.empty(shape, dtype=getattr(torch, dtype), pin_memory=True).numpy()

    def from_host(self, array: np.ndarray, device: str, pinned: bool = False) -> Any:
        """A copy of `array` on `device`; pinned=True copies asynchronously from page-locked memory.

        Pass a host_buffer(pinned=True) to time the DMA alone: any other array is first copied
        into a pinned staging buffer, and that copy is part of what is timed.
        """
        torch, target = self._torch(), self._device(device)
        host = np.ascontiguousarray(array)
        if not host.flags.writeable:
            host = host.copy()  # torch.from_numpy warns on read-only memory
        source = torch.from_numpy(host)
        if target.type == "cpu":
            return source.clone()  # a real memcpy, and no aliasing of the caller's array
        if not pinned:
            return source.to(target)
        if not self.supports_pinned(device):
            raise Unsupported(f"torch has no pinned host memory for {device}")
        if not source.is_pinned():
            source = source.pin_memory()
        return source.to(target, non_blocking=True)  # the harness synchronises before reading

    def to_host(self, array: Any, out: np.ndarray | None = None) -> np.ndarray:
        """A numpy copy; bfloat16 comes back as float32 (exactly), its 2-byte values moved raw.

        `out` (e.g. a pinned host_buffer) receives the copy instead of a new array.
        """
        torch = self._torch()
        tensor = array.detach()
        if out is not None:
            torch.from_numpy(out).copy_(tensor)
            return out
        if tensor.dtype == torch.bfloat16:
            return bfloat16_bits_to_float32(self.to_host(tensor.view(torch.int16)))
        if tensor.device.type == "cpu":
            return tensor.numpy().copy()
        return tensor.cpu().numpy()

    def location(self, array: Any) -> str:
        device = array.device
        if device.type == "cpu" or device.type == "mps":
            return device.type
        kind = self._gpu_kind() if device.type == "cuda" else device.type
        index = device.index if device.index is not None else 0
        return f"{kind}:{index}"

    def observe_placement(self, array: object) -> str | None:
        torch = sys.modules.get("torch")  # loaded: we hold one of its tensors
        if framework_of(array) != "torch" or torch is None:
            return None
        device = getattr(array, "device")
        if device.type in ("cpu", "mps", "meta"):
            return str(device.type)
        kind = ("rocm" if getattr(torch.version, "hip", None) else "cuda") if device.type == "cuda" else device.type
        return f"{kind}:{device.index if device.index is not None else 0}"

    def synchronize(self, device: str) -> None:
        kind, index = split_id(device)
        if kind == "cpu":
            return  # CPU kernels return when done
        torch = self._module
        if torch is None:
            return  # torch never loaded: nothing can have been queued
        if kind in ("cuda", "rocm"):
            torch.cuda.synchronize(index)
        elif kind == "mps":
            torch.mps.synchronize()
        elif kind == "xpu":
            torch.xpu.synchronize(index)

    # -- arrays on the device ------------------------------------------------------------------
    def namespace(self, device: str) -> Any:
        return self._torch()

    def arrays(self, device: str) -> Any:
        from accelbench.backends.torch_arrays import TorchArrays

        return TorchArrays(self, device)

    def _xp(self, array: Any) -> Any:
        return self._module

    def _dtype(self, dtype: str, device: str) -> Any:
        if dtype not in self.dtypes(device):
            raise Unsupported(f"torch has no {dtype} on {device} (it has {', '.join(self.dtypes(device))})")
        return getattr(self._torch(), dtype)

    def random(self, shape: tuple[int, ...], dtype: str, device: str, seed: int) -> Any:
        torch, target = self._torch(), self._device(device)
        generator = torch.Generator(device=target)  # drawn on the device, not copied from the host
        generator.manual_seed(seed)
        values = torch.empty(shape, dtype=self._dtype(dtype, device), device=target)
        return values.uniform_(-1.0, 1.0, generator=generator)

    def empty(self, shape: tuple[int, ...], dtype: str, device: str) -> Any:
        return self._torch().empty(shape, dtype=self._dtype(dtype, device), device=self._device(device))

    def astype(self, array: Any, dtype: str) -> Any:
        return array.to(dtype=self._dtype(dtype, self.location(array)), copy=True)

    # -- ops: fused where torch has one kernel for the whole expression -------------------------
    def copy(self, a, out):
        return out.copy_(a)

    def triad(self, a, b, scalar, out):
        return self._module.add(a, b, alpha=scalar, out=out)  # out = a + scalar*b, one pass

    def elementwise(self, a, out):
        return self._module.addcmul(a, a, a, out=out)  # out = a + a*a, one pass

    # -- CPU threads -----------------------------------------------------------------------------
    @contextlib.contextmanager
    def threads(self, count: int | None) -> Iterator[int | None]:
        """torch's intra-op threads (OpenMP and MKL) set to `count`, restored afterwards."""
        torch = self._torch()
        if count is None:
            yield torch.get_num_threads()
            return
        if count < 1:
            raise UsageError(f"threads must be at least 1, not {count}")
        previous = torch.get_num_threads()
        torch.set_num_threads(count)
        try:
            yield torch.get_num_threads()
        finally:
            torch.set_num_threads(previous)
