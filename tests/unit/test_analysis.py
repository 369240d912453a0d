"""Ceilings come from the ceiling workloads only: a reduction that stayed in cache is no bandwidth."""
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.runner.analysis import analyse


def _m(workload, seconds, bytes_moved, **params):
    return Measurement(spec=Spec.make(workload, "torch", "cpu", dtype="float32", **params),
                       phases_s={"compute": (seconds,) * 10}, first_call_s=seconds,
                       work=Work(flops=0.0, bytes_moved=bytes_moved), check=Check(True, 0.0, 1e-5))


def test_measured_bandwidth_is_the_best_stream_not_a_cached_reduce():
    stream = _m("stream", 0.010, 300e6, kernel="triad", n=1)   # 30 GB/s
    cached = _m("reduce", 0.001, 100e6, n=1)                   # 100 GB/s: in cache
    rows = {r.spec.workload: r for r in analyse([stream, cached])}
    assert abs(rows["stream"].of_measured - 1.0) < 1e-9
    assert abs(rows["reduce"].of_measured - 100 / 30) < 1e-6  # over 100%: the advice flags it
