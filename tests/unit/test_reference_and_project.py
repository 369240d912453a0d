"""The seeds' published figures with their sources, a run placed among them, and roofline projections."""
import json
import re

import pytest

from accelbench.cli.main import main
from accelbench.report.compare import reference
from accelbench.report.compare.project import ASSUMPTIONS, project_run, resolve_target, roofline_time_s
from accelbench.report.compare.sources import RunData
from accelbench.devices import datasheets
from accelbench.errors import UsageError
from accelbench.results import Check, Measurement, Spec, Work
from accelbench.store.db import Store

CPU_FP32_FLOPS = 166e9   # formula peak in the synthetic inventory
CPU_FP64_FLOPS = 83e9
STREAM_BYTES_PER_S = 20e9  # what the synthetic stream result reaches
H100 = {"fp32": 67e12, "bw": 3.35e12}


def measured(spec, median_s, flops=0.0, bytes_moved=0.0, passed=True, extra=None):
    times = tuple(median_s * f for f in (0.99, 1.0, 1.01) * 4)
    return Measurement(spec=spec, phases_s={"compute": times}, first_call_s=median_s, work=Work(flops, bytes_moved),
                       check=Check(passed, 1e-7, 1e-5), extra=extra or {})


def synthetic_run(*ms):
    peaks = [{"metric": "fp32", "value": CPU_FP32_FLOPS, "provenance": "formula", "detail": "2 cores × ..."},
             {"metric": "fp64", "value": CPU_FP64_FLOPS, "provenance": "formula", "detail": "2 cores × ..."}]
    machine = {"hostname": "box", "inventory": {"devices": [{"id": "cpu", "name": "AMD EPYC", "peaks": peaks}]}}
    return RunData("run-1", source="test", measurements=tuple(ms), machine=machine)


N = 2000
MATMUL = Spec.make("matmul", "numpy", "cpu", n=N, dtype="float32", threads=2)
TRIAD_N = 2**24
TRIAD = Spec.make("stream", "numpy", "cpu", kernel="triad", n=TRIAD_N, dtype="float64", threads=2)
TRIAD_BYTES = 3 * TRIAD_N * 8


def test_every_reference_row_has_its_source_and_a_consistent_value():
    found = reference.benchmarks()
    assert {b.key for b in found} == {"vgg19-inference-batch8", "mnist-mlp-epoch"}
    keys = {row.key for row in datasheets.rows()}
    for benchmark in found:
        assert benchmark.maps_from["workload"] and benchmark.rows
        for row in benchmark.rows:
            assert all(row.source[f].strip() for f in reference.SOURCE_FIELDS)
            assert row.source["seed"] in {"000_9b17c4f93a316a56.txt", "004_edc4cf9964499119.txt"}
            assert row.datasheet_key is None or row.datasheet_key in keys
    vgg = {r.device: r for r in found[0].rows}
    for row in vgg.values():  # the seed prints the cumulative time after 10 batches
        printed_s = float(re.search(r"(\d+,\d+)", row.source["figure"]).group(1).replace(",", "."))
        assert row.value_s == pytest.approx(printed_s / 10, rel=1e-3)
    assert sorted(r.value_s for r in vgg.values()) == [0.424, 0.929, 4.198]


def test_a_result_is_placed_only_where_its_definition_matches():
    vgg = {"dtype": "float32", "image_px": 224, "depth": 19, "layout": "channels_last"}
    vgg8 = measured(Spec.make("vgg-infer", "torch", "cpu", batch=8, **vgg), 1.3)
    vgg16 = measured(Spec.make("vgg-infer", "torch", "cpu", batch=16, **vgg), 2.5)
    small = measured(Spec.make("vgg-infer", "torch", "cpu", batch=8, **{**vgg, "image_px": 64}), 0.1)
    mlp = measured(Spec.make("mlp", "torch", "cpu", batch=128, dtype="float32", epochs=30), 0.004)
    vgg_place, mlp_place = reference.place_run(synthetic_run(vgg8, vgg16, small, mlp))
    assert [u.measurement for u in vgg_place.user] == [vgg8] and vgg_place.user[0].value_s == pytest.approx(1.3)
    assert [who for _, who, _ in vgg_place.ordered()] == ["seed", "seed", "yours", "seed"]
    assert [u.measurement for u in mlp_place.user] == [mlp]
    assert mlp_place.user[0].value_s == pytest.approx(0.004 / 128 * 48000)  # one step per batch of 128
    unscalable = measured(Spec.make("mlp", "torch", "cpu", dtype="float32"), 0.065)
    assert "cannot scale to 48,000 samples" in reference.place_run(synthetic_run(unscalable))[1].not_placed[0]


def test_datasheet_shares_use_the_per_device_peak():
    rate_flops = 2.0 * N**3 / 0.1
    report = reference.reference_report(synthetic_run(measured(MATMUL, 0.1, flops=2.0 * N**3, bytes_moved=1.0)))
    (matmul,) = report["datasheet_shares"]
    shares = {s["datasheet"]: s for s in matmul["shares"]}
    assert shares["h100-sxm"]["share"] == pytest.approx(rate_flops / H100["fp32"])
    assert shares["mi250x"]["peak"] == pytest.approx(47.9e12 / 2)  # two devices per package
    assert "apple-m3" not in shares  # no fp32 figure on its datasheet row


def test_projection_of_a_matmul_onto_an_h100_is_the_roofline_formula():
    flops, bytes_moved, measured_s = 2.0 * N**3, 3.0 * N * N * 4, 0.2
    stream = measured(TRIAD, TRIAD_BYTES / STREAM_BYTES_PER_S, flops=2.0 * TRIAD_N, bytes_moved=TRIAD_BYTES)
    report = project_run(synthetic_run(measured(MATMUL, measured_s, flops, bytes_moved), stream), "h100")
    p = next(p for p in report.projections if p.spec == MATMUL)
    here_s = max(flops / CPU_FP32_FLOPS, bytes_moved / STREAM_BYTES_PER_S)
    there_s = max(flops / H100["fp32"], bytes_moved / H100["bw"])
    assert p.efficiency == pytest.approx(here_s / measured_s)
    assert p.projected_s == pytest.approx(there_s / (here_s / measured_s))
    assert p.projected_s == pytest.approx(measured_s * there_s / here_s)
    assert (p.source_bound, p.target_bound) == ("compute", "compute")
    assert p.source_bandwidth.provenance == "measured in this run" and p.target_flops.metric == "fp32"
    assert report.to_dict()["kind"].startswith("PROJECTION") and report.assumptions == ASSUMPTIONS
    assert roofline_time_s(flops, bytes_moved, H100["fp32"], H100["bw"]) == pytest.approx(there_s)


def test_memory_bound_workloads_scale_with_bandwidth():
    triad = measured(TRIAD, 0.05, flops=2.0 * TRIAD_N, bytes_moved=TRIAD_BYTES)
    reference_stream = measured(Spec.make("stream", "numpy", "cpu", kernel="copy", n=TRIAD_N, dtype="float64",
                                          threads=2), 2 * TRIAD_N * 8 / STREAM_BYTES_PER_S, bytes_moved=2 * TRIAD_N * 8)
    run = synthetic_run(triad, reference_stream)
    on_h100 = next(p for p in project_run(run, "h100").projections if p.spec == TRIAD)
    on_a100 = next(p for p in project_run(run, "a100-sxm4-80gb").projections if p.spec == TRIAD)
    assert on_h100.target_bound == "memory" and on_h100.source_bound == "memory"
    assert on_h100.projected_s == pytest.approx(0.05 * STREAM_BYTES_PER_S / H100["bw"])
    assert on_a100.projected_s / on_h100.projected_s == pytest.approx(3.35 / 2.039)


def test_what_cannot_be_projected_says_why():
    copies = measured(Spec.make("memcpy", "torch", "cuda:0", bytes=2**26, direction="h2d"), 0.01, bytes_moved=2**26)
    wrong = measured(MATMUL, 0.1, flops=2.0 * N**3, bytes_moved=1.0, passed=False)
    double = measured(Spec.make("matmul", "numpy", "cpu", n=N, dtype="float64"), 0.1, flops=2.0 * N**3, bytes_moved=1.0)
    reasons = dict(project_run(synthetic_run(copies, wrong, double), "rtx-4090").not_projected)
    assert "host link" in reasons[copies.spec] and "check failed" in reasons[MATMUL]
    assert "gives no fp64_matrix or fp64 figure" in reasons[double.spec]


def test_too_fast_for_the_source_ceiling_is_capped():
    fast = measured(MATMUL, 2.0 * N**3 / (2 * CPU_FP32_FLOPS), flops=2.0 * N**3)  # twice the formula peak
    (p,) = project_run(synthetic_run(fast), "h100").projections
    assert p.capped and p.efficiency == 1.0 and p.projected_s == pytest.approx(2.0 * N**3 / H100["fp32"])


def test_a_device_without_a_physical_peak_is_not_projected_at_its_own_rate():
    """PoCL fp64 or a plugin device: its measured best is not a ceiling to be 100% efficient against."""
    opencl = Spec.make("matmul", "pyopencl", "opencl:0:0", n=N, dtype="float64")
    slow = measured(opencl, 5.0, flops=2.0 * N**3, bytes_moved=3.0 * N * N * 8)
    stream_alone = measured(TRIAD, 0.05, flops=2.0 * TRIAD_N, bytes_moved=TRIAD_BYTES)
    report = project_run(synthetic_run(slow, stream_alone), "h100")
    reasons = dict(report.not_projected)
    assert "no datasheet or formula fp64_matrix peak for opencl:0:0" in reasons[opencl]
    assert "apart from this result itself" in reasons[TRIAD]  # stream is not its own ceiling


def test_every_projection_names_its_assumption_and_stays_above_the_target_bound():
    flops, bytes_moved = 2.0 * N**3, 3.0 * N * N * 4
    stream = measured(TRIAD, TRIAD_BYTES / STREAM_BYTES_PER_S, flops=2.0 * TRIAD_N, bytes_moved=TRIAD_BYTES)
    for measured_s in (1e-6, 0.2, 30.0):  # impossibly fast, plausible, slow
        report = project_run(synthetic_run(measured(MATMUL, measured_s, flops, bytes_moved), stream), "h100")
        p = next(p for p in report.projections if p.spec == MATMUL)
        assert p.projected_s >= flops / H100["fp32"] * 0.999
        assert "of fp32 there, as here against fp32 (formula)" in p.assumption
        assert report.to_dict()["projections"][0]["assumption"]


def test_a_problem_under_one_kernel_launch_projects_to_the_launch_floor_as_a_lower_bound(capsys):
    """256×256 float32 matmul: the roofline says about 0.8 µs on an H100, under any kernel launch."""
    from accelbench.cli.project_cmd import _render
    from accelbench.report.compare.project import LAUNCH_FLOOR_S

    n = 256
    small = Spec.make("matmul", "numpy", "cpu", n=n, dtype="float32", threads=2)
    flops, bytes_moved = 2.0 * n**3, 3.0 * n * n * 4
    stream = measured(TRIAD, TRIAD_BYTES / STREAM_BYTES_PER_S, flops=2.0 * TRIAD_N, bytes_moved=TRIAD_BYTES)
    run = synthetic_run(measured(small, flops / CPU_FP32_FLOPS / 0.5, flops, bytes_moved),  # 50% of the peak
                        measured(MATMUL, 0.2, 2.0 * N**3, 3.0 * N * N * 4), stream)
    report = project_run(run, "h100")
    p = next(p for p in report.projections if p.spec == small)
    assert p.roofline_s == pytest.approx(flops / H100["fp32"] / 0.5) and p.roofline_s < LAUNCH_FLOOR_S
    assert p.projected_s == LAUNCH_FLOOR_S and p.lower_bound and p.target_bound == "launch"
    assert "too small to project" in p.assumption and "a lower bound" in p.assumption
    assert report.to_dict()["projections"][0]["lower_bound"] is True
    large = next(p for p in report.projections if p.spec == MATMUL)
    assert not large.lower_bound and large.projected_s > LAUNCH_FLOOR_S  # 2000² is above the floor
    assert all(p.projected_s >= LAUNCH_FLOOR_S for p in report.projections)
    _render(report)
    text = " ".join(capsys.readouterr().out.split())
    assert "≥ 5.00 µs" in text and "too small for the roofline to say more than a lower bound" in text


def _stored(tmp_path, *ms):
    db = tmp_path / "r.sqlite"
    run = synthetic_run(*ms)
    with Store(db) as store:
        store.restore_run("run-1", started_at="2026-01-01T00:00:00+00:00", finished_at=None, status="complete",
                          accelbench_version="0.1.0", selection={}, machine=run.machine, tags={},
                          results=run.measurements, skips=())
    return db


def test_compare_reference_places_the_run_on_the_command_line(tmp_path, capsys):
    vgg8 = measured(Spec.make("vgg-infer", "torch", "cpu", batch=8, dtype="float32", image_px=224), 1.3)
    db = _stored(tmp_path, vgg8, measured(MATMUL, 0.2, flops=2.0 * N**3))
    assert main(["compare", "--reference", "run-1", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "yours" in out and "929 ms" in out and "you 1.40× slower" in out and "NVIDIA H100 SXM" in out
    assert main(["compare", "--reference", "run-1", "--db", str(db), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["benchmarks"][0]["yours"][0]["value_s"] == pytest.approx(1.3)
    assert main(["compare", "--reference", "run-1", "latest", "--db", str(db)]) == 2


def test_unknown_target_exits_2_listing_the_accepted_names(tmp_path, capsys):
    with pytest.raises(UsageError, match="h100-sxm"):
        resolve_target("h999")
    assert resolve_target("H100").key == "h100-sxm" and resolve_target("mi300x").key == "mi300x"
    db = _stored(tmp_path, measured(MATMUL, 0.2, flops=2.0 * N**3))
    assert main(["project", "run-1", "--to", "h999", "--db", str(db)]) == 2
    err = capsys.readouterr().err
    assert "'h999'" in err and "h100-sxm" in err and "mi300x" in err
    assert main(["project", "run-1", "--to", "h100", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "PROJECTION" in out and "NVIDIA H100 SXM" in out and "Assumptions" in out
    assert main(["project", "run-1", "--to", "h100", "--db", str(db), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["projections"][0]["target_flops"]["value"] == H100["fp32"]


def test_a_placed_result_names_the_differences_that_matter_in_the_report_too():
    from accelbench.report.reference_html import reference_html

    vgg = measured(Spec.make("vgg-infer", "keras-jax", "cpu", batch=8, dtype="float32", image_px=224, depth=19), 2.4)
    mlp = measured(Spec.make("mlp", "keras-torch", "cpu", batch=128, dtype="float32"), 0.006,
                   extra={"train_digits": 4000})
    run = synthetic_run(vgg, mlp)
    vgg_place, mlp_place = reference.place_run(run)
    (vgg_figure,), (mlp_figure,) = vgg_place.user, mlp_place.user
    assert vgg_figure.differences[0].startswith("hardware: AMD EPYC (cpu) here; published: 6-core CPU of a MacBook")
    assert "keras-jax backend here; published: Keras with the TensorFlow backend" in vgg_figure.differences[1]
    assert any(d.startswith("weights: random here") for d in vgg_figure.differences)
    assert "data: 4,000 training digits here" in " ".join(mlp_figure.differences)
    page = reference_html(run)
    assert "Against the tutorials' published figures" in page and "this run: vgg-infer keras-jax@cpu" in page
    assert "ImageNet" in page and "4,000 training digits" in page
    assert "the PlaidML tutorial on a MacBook" in page and "seed 0" not in page  # tutorials named in words
    assert reference_html(synthetic_run()) == ""


def test_a_run_with_nothing_to_project_prints_no_empty_table(tmp_path, capsys):
    wrong = measured(MATMUL, 0.1, flops=2.0 * N**3, bytes_moved=1.0, passed=False)
    assert main(["project", "run-1", "--to", "h100", "--db", str(_stored(tmp_path, wrong))]) == 0
    out = capsys.readouterr().out
    assert "Nothing of run run-1 could be projected." in out and "Not projected (1):" in out
    assert "measured" not in out.split("Nothing of run")[1]  # no table headers over no row
