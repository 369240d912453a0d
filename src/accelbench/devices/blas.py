"""The BLAS and OpenMP libraries actually loaded, and the environment variables that steer them.

threadpoolctl only sees libraries already loaded into the process, so numpy is imported first:
what is reported is what numpy's matrix multiply really uses.
"""
from __future__ import annotations

import os

THREAD_ENV_VARS = (
    "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE", "OPENBLAS_VERBOSE", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS", "GOTO_NUM_THREADS", "MKL_ENABLE_INSTRUCTIONS", "MKL_DEBUG_CPU_TYPE",
    "MKL_THREADING_LAYER", "KMP_AFFINITY", "OMP_PROC_BIND", "OMP_PLACES", "ONEDNN_MAX_CPU_ISA",
    "DNNL_MAX_CPU_ISA", "TORCH_NUM_THREADS",
)


def thread_environment(environ=None) -> dict[str, str]:
    environ = os.environ if environ is None else environ
    return {name: environ[name] for name in THREAD_ENV_VARS if name in environ}


def loaded_libraries() -> list[dict]:
    """[{library, api, version, threads, core_type, threading_layer, path}] as threadpoolctl sees them."""
    try:
        import numpy  # noqa: F401 - loads numpy's BLAS so threadpoolctl can see it
        from threadpoolctl import threadpool_info
    except ImportError as exc:
        return [{"library": "unknown", "api": "blas", "error": f"{exc.name} is not installed"}]
    libraries = []
    for info in threadpool_info():
        libraries.append({
            "library": info.get("internal_api", "unknown"),
            "api": info.get("user_api", "unknown"),
            "version": info.get("version"),
            "threads": info.get("num_threads"),
            "core_type": info.get("architecture"),
            "threading_layer": info.get("threading_layer"),
            "path": info.get("filepath"),
        })
    return libraries
