"""Ceilings come from the ceiling workloads only: a reduction that stayed in cache is no bandwidth."""
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.report.analysis import analyse


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


def test_precision_tradeoff_finding_for_a_statistics_workload():
    from accelbench.report.precision import precision_tradeoffs

    def mc(dtype, seconds, extra):
        return Measurement(spec=Spec.make("montecarlo", "numpy", "cpu", dtype=dtype, n=1000, threads=2),
                           phases_s={"compute": tuple(seconds * (1 + 0.001 * i) for i in range(12))},
                           first_call_s=seconds, work=Work(flops=1e6, bytes_moved=8e3),
                           check=Check(True, 1e-8, 1e-5), extra=extra)
    rows = analyse([mc("float64", 0.02, {}), mc("float32", 0.01, {"rel_error_vs_float64": 3e-8})])
    (finding,) = precision_tradeoffs(rows)
    assert abs(finding.numbers["float64_over_float32_time"] - 2.0) < 0.05
    assert finding.numbers["rel_error_vs_float64"] == 3e-8 and "float32 is 2.00× faster" in finding.text
    # without a float64 partner there is nothing to say
    assert precision_tradeoffs(analyse([mc("float32", 0.01, {})])) == []
