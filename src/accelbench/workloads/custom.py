"""A user's own function as a workload: same preparation, timing, verification and store as the built-ins.

The function receives its inputs as arrays on the device (numpy, torch tensors, ...), so code
written with operators (`a @ b`, `x.sum()`) runs unchanged on every backend with a namespace.
It is checked against `reference` (a function run by numpy in float64 on the host) when one is
given; without one the result is `unverified`: a function cannot be its own proof.
The timed calls take two input sets in turn (the given values, then the same values scaled by
1 + 2⁻⁶), so the reference must accept any inputs of those shapes.

The inputs' own array type says where the function was written to run (`framework`: numpy arrays
→ numpy, torch tensors → torch on their device); an exception the function (or its reference)
raises is kept in `raised`, per backend and device, for the API to raise in the caller.
Rates come only from the work the user declared (`flops=`, `bytes_moved=`), never from guesses.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from accelbench.errors import Unsupported, UsageError
from accelbench.results import Check, Work
from accelbench.workloads.base import Workload
from accelbench.workloads.rotation import Rotation, Variant
from accelbench.vocabulary import ITEMSIZE
from accelbench.workloads.verify import make_check, relative_norm_error, tolerance

PERTURBATION = 2.0 ** -6  # variant k: float inputs scaled by 1 + k·2⁻⁶ (exact in binary)
UNVERIFIED = "unverified: no reference given (pass reference= to check the outputs)"


def dtype_of(arrays: Sequence[np.ndarray]) -> str:
    """The float dtype the inputs are in (the widest), float64 where none is a float."""
    floats = [a.dtype for a in arrays if a.dtype.kind == "f"]
    if not floats:
        return "float64"
    name = np.result_type(*floats).name
    return name if name in ITEMSIZE else "float64"


# an array's type module (its first part) -> the backend that runs code written for it
FRAMEWORKS = {"numpy": "numpy", "torch": "torch", "jax": "jax", "jaxlib": "jax", "cupy": "cupy"}


def framework_of(array: Any) -> str | None:
    """The backend of an array's own type (None: a number, a list, or an unknown array type)."""
    return FRAMEWORKS.get(type(array).__module__.split(".")[0])


def host_copy(array: Any) -> tuple[np.ndarray, str | None]:
    """A numpy copy of any input on the host, and its dtype where numpy has none (bfloat16)."""
    framework = framework_of(array)
    if framework == "torch":
        tensor = array.detach().cpu()
        name = str(tensor.dtype).removeprefix("torch.")
        return (tensor.float().numpy() if name == "bfloat16" else tensor.numpy()), (name if name == "bfloat16" else None)
    if framework == "cupy":
        return np.asarray(array.get()), None
    name = str(getattr(array, "dtype", ""))
    if name == "bfloat16":  # jax and ml_dtypes arrays
        return np.asarray(array, dtype=np.float32), name
    return np.asarray(array), None


class FunctionWorkload(Workload):
    size_param = "inputs"
    size_unit = "arrays"

    def __init__(self, fn: Callable, inputs: Sequence[np.ndarray], *, name: str | None = None,
                 reference: Callable | None = None, rel_tolerance: float | None = None,
                 flops: float = 0.0, bytes_moved: float | None = None, dtypes: Sequence[str] | None = None):
        if not callable(fn):
            raise UsageError(f"fn: {fn!r} is not callable")
        if reference is not None and not callable(reference):
            raise UsageError(f"reference: {reference!r} is not callable (a function computing the expected output)")
        if isinstance(inputs, (str, bytes)) or not isinstance(inputs, Sequence):
            raise UsageError("inputs: a list of the function's arguments (arrays), e.g. [a, b] for fn(a, b)")
        frameworks = {f for f in map(framework_of, inputs) if f not in (None, "numpy")}
        if len(frameworks) > 1:
            raise UsageError(f"inputs: arrays of {' and '.join(sorted(frameworks))} mixed; a function runs on one")
        self.framework = frameworks.pop() if frameworks else "numpy"
        self.given = [x for x in inputs if framework_of(x) == self.framework]  # where the inputs live
        try:
            copies = [host_copy(x) for x in inputs]
        except (TypeError, ValueError) as exc:
            raise UsageError(f"inputs: cannot read them as arrays ({exc})") from None
        arrays = [a for a, _ in copies]
        if not arrays or any(a.dtype.kind not in "fiu" for a in arrays):
            raise UsageError("inputs: one or more numeric arrays (numpy, torch, jax, cupy, or convertible)")
        self.fn, self.inputs, self.reference = fn, arrays, reference
        # (backend, device) -> ("function" or "reference", what the user's code raised there)
        self.raised: dict[tuple[str, str], tuple[str, Exception]] = {}
        self.name = name or str(getattr(fn, "__name__", "function"))
        self.description = (fn.__doc__ or f"user function {self.name}").strip().splitlines()[0]
        try:
            self.flops = float(flops)
            self.bytes_moved = None if bytes_moved is None else float(bytes_moved)
            self.rel_tolerance = None if rel_tolerance is None else float(rel_tolerance)
        except (TypeError, ValueError):
            raise UsageError(f"flops, bytes_moved, rel_tolerance: numbers ({flops!r}, {bytes_moved!r}, "
                             f"{rel_tolerance!r} given)") from None
        if self.rel_tolerance is not None and not 0 < self.rel_tolerance < 1:
            raise UsageError(f"rel_tolerance: {rel_tolerance!r}; accepted: a relative error above 0 and below 1")
        special = [name for _, name in copies if name]
        self.dtypes = tuple(dtypes) if dtypes else ((special[0],) if special else (dtype_of(arrays),))
        unknown = [d for d in self.dtypes if d not in ITEMSIZE]
        if unknown:
            raise UsageError(f"dtypes: {', '.join(map(repr, unknown))}; accepted: {', '.join(ITEMSIZE)}")
        for argument, value in (("flops", self.flops), ("bytes_moved", self.bytes_moved)):
            if value is not None and not value >= 0:
                raise UsageError(f"{argument}: {value!r}; accepted: the work of one call, 0 or more (None: not declared)")

    def grid(self, sizes, dtypes, quick):
        return [{"dtype": d} for d in (dtypes or self.dtypes)]

    def work(self, params):
        """Only what the user declared: without `flops=` or `bytes_moved=` there is no rate."""
        return Work(self.flops, self.bytes_moved or 0.0)

    def _record(self, backend, device: str, error: Exception, role: str = "function") -> None:
        self.raised.setdefault((backend.name, device), (role, error))

    def footprint_bytes(self, params):
        return int(sum(a.nbytes for a in self.inputs) * 4)

    def _variant_hosts(self, index: int, dtype: str) -> list[np.ndarray]:
        factor = 1.0 + index * PERTURBATION
        return [(a * factor).astype(dtype if dtype != "bfloat16" else np.float32) if a.dtype.kind == "f" else a
                for a in self.inputs]

    def prepare(self, backend, device, params, seed):
        dtype = params["dtype"]
        if dtype not in backend.dtypes(device):
            raise Unsupported(f"{backend.name} has no {dtype} on {device}")
        if backend.namespace(device) is None:
            raise Unsupported(f"{backend.name} arrays support no array operators, so a Python function cannot run "
                              f"on {device}; user functions run on numpy, torch, jax or cupy devices")
        limit = self.rel_tolerance if self.rel_tolerance is not None else tolerance(dtype, 10)

        def make(index: int) -> Variant:
            hosts = self._variant_hosts(index, dtype)
            arrays = [backend.from_host(h, device) for h in hosts]
            if dtype == "bfloat16":
                arrays = [backend.astype(a, dtype) if h.dtype.kind == "f" else a for a, h in zip(arrays, hosts)]
            return Variant(arrays, expected_of(hosts), hosts=hosts)

        def expected_of(hosts: list[np.ndarray]) -> np.ndarray:
            if self.reference is None:
                return np.empty(0)
            try:
                result = self.reference(*[h.astype(np.float64) if h.dtype.kind == "f" else h for h in hosts])
            except Exception as exc:
                self._record(backend, device, exc, "reference")
                raise
            return np.asarray(result, dtype=np.float64)

        def call(variant: Variant):
            try:
                return self.fn(*variant.inputs)
            except Exception as exc:
                self._record(backend, device, exc)
                raise

        def judge(output, variant: Variant) -> Check:
            if self.reference is None:
                return Check(True, float("nan"), limit, UNVERIFIED, backend.location(output))
            error = relative_norm_error(np.atleast_1d(backend.to_host(output)), np.atleast_1d(variant.reference))
            return make_check(error, limit, backend.location(output), device, f"{self.name} vs float64 reference")

        rotation = Rotation(make, judge)

        def to_device():
            return rotation.upcoming.upload(lambda h: backend.from_host(h, device))

        shared = backend.shares_host_memory(device)
        return rotation.prepared(backend, op=call, to_device=None if shared else to_device,
                                 unverified=None if self.reference else UNVERIFIED)
