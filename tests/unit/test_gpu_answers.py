"""The tutorials' answers in scripts/gpu_summary.py's summary (scripts/gpu_answers.py), replayed:
an H200 check's tutorial steps (tests/recorded_gpu_check.py) give one line per answer, each with its
interval; what is missing or wrong fails its own line and names why."""
from __future__ import annotations

import json

import pytest
from recorded_gpu_check import PEAK, gpu_result, timed_out
from test_gpu_summary import h200_folder, lines_of, summary


@pytest.fixture
def folder(tmp_path):
    return h200_folder(tmp_path)


def _rewrite(folder, name: str, change) -> None:
    path = folder / name
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def test_the_answers_come_first_in_the_order_the_check_gathers_them(folder):
    names = [line.name for line in summary.summary_lines(summary.Evidence(folder))]
    order = ["inventory (info --all --json)", "answer torch@cuda:0 (quick suite)", "seed matmul float64",
             "statistics montecarlo", "DL mlp", "DL vgg-infer", "keras-torch on cuda:0", "cupy on cuda:0",
             "monitor during a run", "setup --device cuda:0", "peak maximum/sustained", "deviceQuery",
             "bf16 matmul n=8192 vs hand loop", "GPU-marked tests"]
    assert [names.index(n) for n in order] == sorted(names.index(n) for n in order)


def test_each_answer_states_the_speed_up_with_its_interval(folder):
    lines = lines_of(folder)
    answer = lines["answer torch@cuda:0 (quick suite)"]
    assert answer.status == "PASS" and "matmul float32 n=2,048: vs all cores 41× faster [38.9–43.1]" in answer.detail
    assert "vs one core 520× faster [494–546]" in answer.detail and "confidence high" in answer.detail
    assert lines["break-even torch@cuda:0 (quick suite)"].detail == "breaks even at n ≈ 600 with transfers"
    assert "smallest order" in lines["break-even torch@cuda:0 (seed matmul)"].detail
    assert lines["CPU baseline (quick suite)"].detail.startswith("CPU: Intel Xeon")
    seed = lines["seed matmul bfloat16"]
    assert seed.status == "PASS"
    assert "dtype=bfloat16 n=3000: vs all cores 9× faster [8.55–9.45], vs one core 120× faster" in seed.detail
    assert lines["statistics mcmc"].status == "PASS" and "vs all cores 6× faster" in lines["statistics mcmc"].detail
    vgg = lines["DL vgg-infer"]
    assert vgg.status == "PASS" and "layout=channels_last" in vgg.detail and "vs one core none" in vgg.detail
    assert "not measured: torch@cpu 1 thread(s): spec took longer than 15 s" in vgg.detail
    assert lines["jax on cuda:0"].status == "PASS" and "jax stream" in lines["jax on cuda:0"].detail


def test_an_optional_backend_missing_on_the_image_is_information_with_its_reason(folder):
    line = lines_of(folder)["keras-jax on cuda:0"]
    assert line.status == "INFO" and "keras is not installed" in line.detail


def test_the_peak_pair_carries_clock_power_spread_settling_and_coverage(folder):
    line = lines_of(folder)["peak maximum/sustained"]
    assert line.status == "PASS"
    assert line.detail.startswith("maximum 794.1 TFLOP/s (best burst's 7 batches: 95% CI 790.2 TFLOP/s–797.0 TFLOP/s)"
                                  " (n=8192, 1,980 MHz, 690 W, 80% of the formula peak)")
    assert "sustained 688.2 TFLOP/s (n=8192, 1,605 MHz, 700 W, settled, held 52 s)" in line.detail
    assert "9 of 9 grid orders and 2 neighbours" in line.detail


def test_device_query_names_its_key_fields_and_what_is_missing(folder):
    line = lines_of(folder)["deviceQuery"]
    assert line.status == "PASS" and line.detail.startswith("via cupy 13.3.0: cc 9.0, SMs 132, warp 32")
    assert "smem/block 48 KiB" in line.detail and "L2 60 MiB" in line.detail and "copy engines 3" in line.detail

    def drop_warp(info):
        next(d for d in info["devices"] if d["id"] == "cuda:0")["properties"]["device_query"].pop("warp_size")
    _rewrite(folder, "info.json", drop_warp)
    line = lines_of(folder)["deviceQuery"]
    assert line.status == "FAIL" and line.detail.endswith("missing: warp_size")


@pytest.mark.parametrize("broken, name, words", [
    ("run-quick-suite.json", "answer (quick suite)", "run missing"),
    ("run-dl-transfer.json", "DL transfer", "not measured: see run-dl-transfer.log"),
    ("peak.json", "peak maximum/sustained", "peak.json missing"),
    ("monitor.log", "monitor during a run", "no cuda:0 block"),
    ("setup-settings.toml", "setup --device cuda:0", "setup-settings.toml missing"),
])
def test_missing_evidence_fails_its_own_line(folder, broken, name, words):
    (folder / broken).unlink()
    lines = lines_of(folder)
    assert lines[name].status == "FAIL" and words in lines[name].detail
    assert summary.main([str(folder)]) == 1


def test_a_gpu_result_without_a_cpu_comparison_or_with_a_failed_check_fails(folder):
    _rewrite(folder, "run-stats.json", lambda doc: doc["results"].__setitem__(
        0, gpu_result("montecarlo", n=2**20, dtype="float32", all_cores=None, one_core=None)))
    _rewrite(folder, "run-dl-train.json", lambda doc: doc["results"].__setitem__(
        1, gpu_result("cnn", batch=128, dtype="float32", passed=False)))
    lines = lines_of(folder)
    assert lines["statistics montecarlo"].status == "FAIL" and "vs all cores none" in lines["statistics montecarlo"].detail
    assert lines["DL cnn"].status == "FAIL" and "check FAILED: max error 0.5" in lines["DL cnn"].detail


def test_a_workload_whose_every_spec_timed_out_says_so(folder):
    _rewrite(folder, "run-dl-transfer.json", lambda doc: doc.update(
        results=[], skips=[timed_out("transfer", 16, batch=8, image_px=224, mode="full")]))
    line = lines_of(folder)["DL transfer"]
    assert line.status == "FAIL" and "torch@cpu 16 thread(s): spec took longer than 15 s" in line.detail


def test_an_unsettled_or_unchecked_peak_is_named(folder):
    _rewrite(folder, "peak.json", lambda doc: (doc["sustained"].update(settled=False),
                                               doc["maximum"].pop("batches")))
    line = lines_of(folder)["peak maximum/sustained"]
    assert "not settled within the budget" in line.detail and "(one burst, no spread)" in line.detail
    _rewrite(folder, "peak.json", lambda doc: doc.update(final_check_passed=False))
    assert lines_of(folder)["peak maximum/sustained"].status == "FAIL"
    assert PEAK["final_check_passed"]  # the shared recording itself is untouched


def test_a_skipped_step_and_a_timed_out_step_read_differently(folder):
    (folder / "steps.tsv").write_text("run-stats\t124\t50\npeak\t124\t0\nmonitor (beside the step before)\t0\t30\n")
    lines = lines_of(folder)
    assert "timed out after 50 s" in lines["step run-stats"].detail
    assert "budget ran out before it" in lines["step peak"].detail
    assert lines["wall time"].detail.startswith("50 s in all")  # the monitor's seconds are not added twice
