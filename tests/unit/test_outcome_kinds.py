"""Outcomes as values (issue 43): a check's failed conditions and the device its output lived on
are fields, so findings and further judging read them, never the words of a check's detail."""
from __future__ import annotations

from synthetic_runs import measurement, run_data

from accelbench.report.advice_checks import wrong_device
from accelbench.results import Check
from accelbench.workloads.stats.checking import Conditions


def test_a_statistical_check_names_its_failed_conditions_as_values():
    failed = Conditions("asian option").within("price", 2.0, 1.0).within("stderr", 0.1, 1.0).check("cpu", "cpu")
    assert failed.failed_conditions == ("price",) and not failed.passed
    elsewhere = Conditions("asian option").within("price", 2.0, 1.0).check("cpu", "cuda:0")
    assert elsewhere.failed_conditions == ("device", "price")
    assert Conditions("x").within("price", 0.5, 1.0).check("cpu", "cpu").failed_conditions == ()


def _with_check(check: Check):
    import dataclasses

    m = measurement("matmul", "torch", "cuda:0", compute_s=1e-3, n=256, dtype="float32")
    return dataclasses.replace(m, check=check, verdict="invalid")


def test_wrong_device_reads_where_the_output_lived_not_the_words():
    reworded = _with_check(Check(False, 0.0, 1e-3, "the output was found elsewhere", device_seen="cpu"))
    assert wrong_device(run_data([reworded]).rows)
    lookalike = _with_check(Check(False, 1.0, 1e-3, "ran on cpu, asked for cuda:0 (only words)", device_seen="cuda:0"))
    assert not wrong_device(run_data([lookalike]).rows)


def test_every_refusal_of_a_device_id_carries_the_ids_it_refused():
    """`accelbench run` adds the inventory's reason for each refused device (`--device cuda:0` with a
    CPU-only torch) from UsageError.refused_devices, so every place that refuses device ids sets it."""
    import pytest

    from accelbench.backends.numpy_backend import NumpyBackend
    from accelbench.errors import UsageError
    from accelbench.settings import choose_devices

    with pytest.raises(UsageError) as chosen:
        choose_devices("cuda:0,cpu", environ={}, available_ids=["cpu"])
    assert chosen.value.refused_devices == ("cuda:0",)
    with pytest.raises(UsageError) as numpy_refused:
        NumpyBackend().empty((2,), "float32", "cuda:1")
    assert numpy_refused.value.refused_devices == ("cuda:1",)
