"""Facts about a timed call's output read from the array itself: its element type against its inputs',
and the marker values the aliasing check writes into a host input and looks for in the output."""
from __future__ import annotations

from typing import Any

import numpy as np

from accelbench.backends import raw_access


def dtype_problem(output: Any, inputs: list[Any]) -> str | None:
    """The output's element type, read from the array, must be its inputs' (a float64 sum kept in float32 is not)."""
    if not inputs:
        return None
    made, given = raw_access.dtype_name(output), raw_access.dtype_name(inputs[0])
    if made is None or given is None or made == given:
        return None
    return f"the output is {made} but its inputs are {given}"


def marker(saved: Any) -> Any:
    """A value unlike `saved` in its own dtype: NaN for a float (0 if it is NaN), the next integer,
    the other boolean (an int64 index array cannot hold a NaN)."""
    if isinstance(saved, (np.bool_, bool)):
        return not saved
    if isinstance(saved, (np.integer, int)):
        return saved ^ 1
    return np.nan if saved == saved else 0.0


def same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN."""
    return bool(a == b) or (a != a and b != b)


def one_blas_thread():
    """numpy's BLAS on one thread for a while: its workers, otherwise left spinning ~0.1 s after a
    product, would share the cores with the timed call that follows."""
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1, user_api="blas")
