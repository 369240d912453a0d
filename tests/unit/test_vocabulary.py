"""The shared vocabulary agrees with the things it names."""
from __future__ import annotations

import numpy as np

from accelbench import vocabulary
from accelbench.timing.rigor import RIGORS


def test_rigor_names_are_the_rigor_levels():
    assert vocabulary.RIGOR_NAMES == tuple(RIGORS)


def test_itemsizes_are_numpys_where_numpy_has_the_dtype():
    for name, dtype in vocabulary.DTYPES.items():
        if name != "bfloat16":
            assert np.dtype(name).itemsize == dtype.itemsize
    assert vocabulary.ITEMSIZE["bfloat16"] == 2


def test_lower_precision_never_has_a_tighter_tolerance():
    ordered = sorted(vocabulary.DTYPES.values(), key=lambda d: -d.itemsize)
    assert [d.tolerance for d in ordered] == sorted(d.tolerance for d in ordered)


def test_the_cpu_baseline_is_numpy_on_the_host():
    assert vocabulary.is_cpu_baseline("numpy", "cpu")
    assert not vocabulary.is_cpu_baseline("torch", "cpu") and not vocabulary.is_cpu_baseline("numpy", "cuda:0")
    assert 1 <= vocabulary.usable_cpus()
