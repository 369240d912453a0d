"""What frameworks are installed, found without importing them.

`accelbench info` must stay fast and light, so installed packages are found with
importlib.util.find_spec and versions with importlib.metadata; torch's build flavour
(CUDA, ROCm or CPU) is read from the text of torch/version.py rather than by importing torch.
"""
from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from functools import lru_cache
from pathlib import Path

# import name -> distribution names, where they differ (CuPy's wheels are named by CUDA version);
# any other module is looked up under its own name, so a new backend needs no entry here
_DISTRIBUTIONS = {
    "cupy": ("cupy-cuda12x", "cupy-cuda13x", "cupy-cuda11x", "cupy-rocm-6-0", "cupy"),
    "pynvml": ("nvidia-ml-py", "pynvml"),
}


@lru_cache(maxsize=None)
def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


@lru_cache(maxsize=None)
def version(module: str) -> str | None:
    for dist in _DISTRIBUTIONS.get(module, (module,)):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


@lru_cache(maxsize=None)
def torch_build() -> dict[str, str | None]:
    """{"version": ..., "cuda": "12.8" | None, "hip": "6.2" | None} from torch/version.py's text."""
    spec = importlib.util.find_spec("torch") if installed("torch") else None
    if spec is None or not spec.submodule_search_locations:
        return {"version": None, "cuda": None, "hip": None}
    text = ""
    for location in spec.submodule_search_locations:
        candidate = Path(location) / "version.py"
        if candidate.is_file():
            text = candidate.read_text(errors="replace")
            break

    def field(name: str) -> str | None:
        match = re.search(rf"^{name}\s*(?::\s*[^=]+)?=\s*['\"]([^'\"]+)['\"]", text, re.MULTILINE)
        return match.group(1) if match else None

    return {"version": field("__version__") or version("torch"), "cuda": field("cuda"), "hip": field("hip")}


def jax_has_gpu_plugin() -> bool:
    return any(installed(name) for name in ("jax_cuda12_plugin", "jax_cuda13_plugin", "jax_rocm60_plugin"))
