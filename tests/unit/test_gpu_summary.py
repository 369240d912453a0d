"""scripts/gpu_summary.py and scripts/gpu_handloops.py without a GPU: plausible H200 outputs replayed
through the summary writer and its comparisons, and the hand loops' arithmetic on a fake torch."""
from __future__ import annotations

import importlib.util
import json
import sys
import types
from pathlib import Path

import pytest
from recorded_gpu_check import write_answers

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


summary = _script("gpu_summary")
handloops = _script("gpu_handloops")
MIB = 2**20


def result(workload: str, rate_g: float, unit: str = "GFLOP/s", *, verdict: str = "valid", seen: str = "cuda:0",
           reasons: tuple[str, ...] = (), telemetry: dict | None = None, spread: float = 0.004, **params) -> dict:
    """One entry of `accelbench run --json` as the summary reads it (rate in G-units, CI from times)."""
    median_s = 1.0e-3
    return {"spec": {"workload": workload, "backend": "torch", "device": "cuda:0", "params": params},
            "check": {"passed": True, "detail": "within tolerance", "device_seen": seen},
            "verdict": verdict, "verdict_reasons": list(reasons), "telemetry": telemetry or {},
            "derived": {"rate": rate_g, "rate_unit": unit, "median_s": median_s,
                        "ci_low_s": median_s * (1 - spread), "ci_high_s": median_s * (1 + spread),
                        # H200 datasheet bf16/fp16 matrix peak 989.5 TFLOP/s, as the inventory has it
                        "percent_of_datasheet_peak": 100 * rate_g / 989.5e3 if unit == "GFLOP/s" else None}}


NVML = {"devices": {"cuda:0": {"source": "nvml", "metrics": {
    "sm_clock_mhz": {"min": 1755, "max": 1980, "mean": 1830},
    "power_w": {"min": 610, "max": 700, "mean": 672},
    "utilization_percent": {"min": 100, "max": 100, "mean": 100}}}}}


def h200_folder(tmp_path: Path, *, bf16_tflops: float = 781.0, pinned_gbs: float = 52.0, pageable_gbs: float = 24.0,
                telemetry: dict | None = None, matmul_extra: tuple = (), gpu: bool = True) -> Path:
    """An output folder as gpu_check.sh leaves it on an H200 (figures of that kind of machine)."""
    folder = tmp_path / "out"
    (folder / "report").mkdir(parents=True)
    (folder / "report" / "report.html").write_text("<html>report</html>")
    (folder / "mode.json").write_text(json.dumps({"gpu": gpu, "reason": "" if gpu else "torch sees no CUDA device",
                                                  "device_name": "NVIDIA H200",
                                                  "versions": {"torch": "2.13.0+cu128", "cuda": "12.8"}}))
    (folder / "info.json").write_text(json.dumps({"devices": [
        {"id": "cpu", "name": "AMD EPYC 9654", "reach": {"numpy": "cpu"}},
        {"id": "cuda:0", "name": "NVIDIA H200", "memory_bytes": 143771 * MIB, "reach": {"torch": "cuda:0"}}]}))
    matmul = [result("matmul", rate * 1e3, n=n, dtype=dtype, telemetry=telemetry if telemetry is not None else NVML)
              for dtype, rates in (("bfloat16", (410.0, 690.0, bf16_tflops)), ("float16", (420.0, 700.0, 785.0)),
                                   ("float32", (45.0, 50.0, 51.0)))
              for n, rate in zip((2048, 4096, 8192), rates)]
    suite = [result("stream", 3.6e3, "GB/s", kernel=k, n=2**23, dtype="float64") for k in ("copy", "triad")]
    for direction, pinned, gbs in (("h2d", False, pageable_gbs), ("h2d", True, pinned_gbs),
                                   ("d2h", False, 20.0), ("d2h", True, 53.0), ("d2d", False, 3950.0)):
        suite += [result("memcpy", gbs * share, "GB/s", direction=direction, pinned=pinned, bytes=size)
                  for size, share in ((MIB, 0.5), (64 * MIB, 1.0))]
    suite += [result("montecarlo", 4.1e3, n=2**24, dtype="float32"),
              result("vgg-infer", 9.0e4, batch=8, dtype="bfloat16", layout="channels_last", image_px=64, depth=19)]
    for name, results in (("run-matmul", matmul + list(matmul_extra)), ("run-suite", suite)):
        (folder / f"{name}.json").write_text(json.dumps({"run_id": name, "results": results}))
    figures = {"matmul_bfloat16": {"tflops": 789.0}, "matmul_float16": {"tflops": 792.0},
               "matmul_float32": {"tflops": 51.5}, "matmul_tf32": {"tflops": 372.0},
               "d2d_copy": {"bytes": 64 * MIB, "tb_per_s": 4.02}, "d2d_copy_large": {"bytes": 2**30, "tb_per_s": 4.31},
               "h2d_pinned": {"gb_per_s": 53.5}, "h2d_pageable": {"gb_per_s": 25.0}}
    (folder / "hand.json").write_text(json.dumps({"status": "ok", "figures": figures, "when": "2026-12-03T09:00:00Z",
                                                  "nvml": {"driver": "570.86.15"}}))
    (folder / "gpu-tests.xml").write_text('<testsuites><testsuite name="pytest" tests="21" failures="0" errors="0" '
                                          'skipped="0"/></testsuites>')
    (folder / "steps.tsv").write_text("detect\t0\t4\ninfo\t0\t18\nrun-matmul\t0\t95\nhand-loops\t0\t14\n")
    if gpu:
        write_answers(folder)  # the tutorial steps' files: tests/recorded_gpu_check.py
    return folder


def lines_of(folder: Path) -> dict[str, object]:
    return {line.name: line for line in summary.summary_lines(summary.Evidence(folder))}


def test_the_two_percent_rule_at_its_edges():
    assert summary.agreement("x", 781.0, 790.0, 0.02, "TFLOP/s", "").status == "PASS"   # -1.1%
    assert summary.agreement("x", 774.5, 790.0, 0.02, "TFLOP/s", "").status == "PASS"   # -1.96%
    assert summary.agreement("x", 773.0, 790.0, 0.02, "TFLOP/s", "").status == "FAIL"   # -2.15%
    assert summary.agreement("x", 806.5, 790.0, 0.02, "TFLOP/s", "").status == "FAIL"   # +2.09%: too fast is wrong too
    assert summary.relative_difference(99.0, 100.0) == pytest.approx(-0.01)


def test_the_rule_widens_to_half_the_hand_loops_own_spread_and_says_so():
    """Measured on an H200 (driver 580, power-capped at 700 W): the bf16 hand loop's 7 repeats spread
    15.4% and accelbench read 687.9 TFLOP/s against its median 702.4 (-2.1%)."""
    hand = {"spread": 0.1536, "repeats": 7}
    line = summary.agreement("x", 687.9, 702.4, 0.02, "TFLOP/s", "", hand)
    assert line.status == "PASS" and "rule ±7.7%: half the hand loop's spread of 15.4% over 7 loops" in line.detail
    assert summary.agreement("x", 640.0, 702.4, 0.02, "TFLOP/s", "", hand).status == "FAIL"   # -8.9%
    assert summary.agreement("x", 760.0, 702.4, 0.02, "TFLOP/s", "", hand).status == "FAIL"   # +8.2%
    steady = summary.agreement("x", 687.9, 702.4, 0.02, "TFLOP/s", "", {"spread": 0.01, "repeats": 7})
    assert steady.status == "FAIL" and "rule ±2%" in steady.detail          # a steady loop keeps the 2%


def test_a_plausible_h200_run_passes_every_check_with_its_figures(tmp_path):
    folder = h200_folder(tmp_path)
    assert summary.main([str(folder)]) == 0
    lines = lines_of(folder)
    assert {line.status for line in lines.values()} <= {"PASS", "INFO"}
    bf16 = lines["bf16 matmul n=8192 vs hand loop"].detail
    assert "accelbench 781.0 TFLOP/s vs hand loop 789.0 TFLOP/s (-1.0%, rule ±2%)" in bf16
    assert "79.0% of the 989 TFLOP/s dense peak (NVIDIA H200 Tensor Core GPU datasheet (2024)" in bf16
    assert "accelbench's own share: 78.9% of the inventory's peak" in bf16
    assert "accelbench 3.95 TB/s vs hand loop 4.02 TB/s (-1.7%, rule ±5%)" in lines["d2d copy vs hand loop"].detail
    assert "1 GiB hand loop 4.31 TB/s" in lines["d2d copy vs hand loop"].detail
    assert "sm_clock_mhz mean 1,830" in lines["NVML telemetry"].detail and "power_w" in lines["NVML telemetry"].detail
    assert "TF32 372.0 TFLOP/s" in lines["matmul tf32"].detail
    assert "n=8192 781.0 TFLOP/s (95% CI 777.9–784.1), 1 ms a call, valid" in lines["matmul bfloat16"].detail
    text = (folder / "summary.txt").read_text().splitlines()
    assert text[1].startswith("mode: NVIDIA H200") and "driver 570.86.15" in text[1]
    assert len(text) == 2 + len(lines)  # the header, then exactly one line per check
    assert json.loads((folder / "summary.json").read_text())[0]["status"] in ("PASS", "INFO")


def test_accelbench_three_percent_below_the_hand_loop_fails_the_check(tmp_path):
    folder = h200_folder(tmp_path, bf16_tflops=765.0)
    line = lines_of(folder)["bf16 matmul n=8192 vs hand loop"]
    assert line.status == "FAIL" and "-3.0%" in line.detail
    assert summary.main([str(folder)]) == 1


def test_a_refused_synchronisation_and_a_result_seen_on_the_cpu_fail(tmp_path):
    refused = result("matmul", 9e6, n=512, dtype="float32", verdict="invalid",
                     reasons=("refused for timing: synchronize() returned before the work was done",))
    strayed = result("matmul", 1e3, n=1024, dtype="float32", seen="cpu")
    lines = lines_of(h200_folder(tmp_path, matmul_extra=(refused, strayed)))
    assert lines["synchronisation probe"].status == "FAIL"
    assert "refused for timing" in lines["synchronisation probe"].detail
    assert lines["placement observed"].status == "FAIL" and "ran on cpu" in lines["placement observed"].detail
    assert lines["matmul float32"].status == "FAIL"  # the invalid result is among float32's


def test_telemetry_without_power_names_what_is_missing(tmp_path):
    partial = {"devices": {"cuda:0": {"source": "nvml", "metrics": {
        "sm_clock_mhz": {"min": 1, "max": 2, "mean": 1.5}, "utilization_percent": {"min": 90, "max": 100, "mean": 95}}}}}
    line = lines_of(h200_folder(tmp_path, telemetry=partial))["NVML telemetry"]
    assert line.status == "FAIL" and line.detail.endswith("missing: power")


def test_pinned_slower_than_pageable_fails_even_if_close_to_the_hand_loop(tmp_path):
    line = lines_of(h200_folder(tmp_path, pinned_gbs=50.0, pageable_gbs=51.0))["h2d pinned vs pageable"]
    assert line.status == "FAIL"
    assert "pinned -6.5% vs hand loop" in line.detail


def test_without_a_gpu_every_gpu_line_skips_and_nothing_fails(tmp_path):
    folder = h200_folder(tmp_path, gpu=False)
    for name in ("run-matmul.json", "run-suite.json", "hand.json"):
        (folder / name).unlink()
    (folder / "run-cpu.json").write_text(json.dumps({"run_id": "cpu", "results": [
        {**result("matmul", 80.0, n=256, dtype="float32", threads=2, seen="cpu"),
         "spec": {"workload": "matmul", "backend": "numpy", "device": "cpu", "params": {"n": 256, "threads": 2}}}]}))
    (folder / "gpu-tests.xml").write_text('<testsuite tests="21" failures="0" errors="0" skipped="21"/>')
    cpu_pair = {"n": 64, "clock_mhz": 3620.0, "power_w": None}
    (folder / "peak.json").write_text(json.dumps({  # `accelbench peak --device cpu` in CPU mode
        "coverage": "1 of 2 grid orders", "formula_peak_flops": 166e9, "final_check_passed": True,
        "maximum": {**cpu_pair, "rate_flops": 40e9}, "sustained": {**cpu_pair, "rate_flops": 37e9, "settled": False}}))
    assert summary.main([str(folder)]) == 0
    lines = lines_of(folder)
    skipped = [line for line in lines.values() if line.status == "SKIP"]
    assert len(skipped) >= 15
    assert all(line.detail.startswith("no GPU (torch sees no CUDA device)") for line in skipped)
    assert "SKIP: no GPU" in (folder / "summary.txt").read_text()
    assert lines["CPU smoke run (pipeline)"].status == "PASS"
    assert {"answer (quick suite)", "seed matmul float64", "DL vgg-infer", "peak maximum/sustained",
            "deviceQuery"} <= {line.name for line in skipped}
    cpu_peak = lines["peak on this CPU (pipeline)"]
    assert cpu_peak.status == "PASS" and "maximum 40.0 GFLOP/s" in cpu_peak.detail and "3,620 MHz" in cpu_peak.detail
    assert "not settled within the budget" in cpu_peak.detail


def test_missing_evidence_fails_its_lines_without_crashing(tmp_path):
    folder = h200_folder(tmp_path)
    for name in ("run-suite.json", "hand.json", "gpu-tests.xml", "info.json"):
        (folder / name).unlink()
    (folder / "steps.tsv").write_text("run-suite\t124\t150\n")
    lines = lines_of(folder)
    for name in ("stream", "memcpy d2d (read+write)", "bf16 matmul n=8192 vs hand loop", "d2d copy vs hand loop",
                 "GPU-marked tests", "inventory (info --all --json)", "step run-suite"):
        assert lines[name].status == "FAIL", name
    assert "timed out after 150 s" in lines["step run-suite"].detail


def test_a_d2d_comparison_needs_the_same_size_on_both_sides(tmp_path):
    folder = h200_folder(tmp_path)
    hand = json.loads((folder / "hand.json").read_text())
    hand["figures"]["d2d_copy"]["bytes"] = 2**30
    (folder / "hand.json").write_text(json.dumps(hand))
    line = lines_of(folder)["d2d copy vs hand loop"]
    assert line.status == "FAIL" and "sizes differ" in line.detail


def test_the_summary_reads_the_metric_names_accelbench_records():
    from accelbench.telemetry.nvml import NVML_METRICS

    assert {name for names in summary.NVML_METRICS.values() for name in names} <= set(NVML_METRICS)


class _FakeCuda:
    """Enough of torch.cuda for the timing loop: every call adds 2 ms of 'GPU time' to the events."""

    def __init__(self):
        self.gpu_ms = 0.0

    def Event(self, enable_timing=False):
        cuda = self

        class Event:
            def record(self):
                self.at = cuda.gpu_ms

            def elapsed_time(self, end):
                return end.at - self.at
        return Event()

    def synchronize(self):
        pass


def test_the_hand_loop_divides_event_time_by_the_calls_in_each_loop():
    fake = types.SimpleNamespace(cuda=_FakeCuda())

    def call():
        fake.cuda.gpu_ms += 2.0

    timing = handloops.timed_per_call(fake, call, repeats=5)
    assert timing["median_s"] == pytest.approx(2e-3)
    assert timing["repeats"] == 5 and timing["iterations"] >= 1 and timing["spread"] == pytest.approx(0.0)


def test_the_hand_loops_say_no_gpu_here_and_still_write_their_file(tmp_path):
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    assert handloops.main(["--out", str(tmp_path / "hand.json")]) == 0
    written = json.loads((tmp_path / "hand.json").read_text())
    assert written["status"] == "skip" and written["reason"].startswith("no GPU: ")
    assert handloops.detect()["gpu"] is False


class _CpuAsCuda:
    """Real torch on the CPU dressed as CUDA: "cuda:0" tensors are CPU tensors, pinned memory is
    ordinary memory, events read the host clock. The hand loops' GPU code runs through it as written."""

    def __init__(self, torch):
        self._torch = torch
        self.cuda = types.SimpleNamespace(Event=self._event, synchronize=lambda: None, empty_cache=lambda: None)

    @staticmethod
    def _event(enable_timing=False):
        import time

        class Event:
            def record(self):
                self.at = time.perf_counter()

            def elapsed_time(self, end):
                return (end.at - self.at) * 1e3
        return Event()

    def __getattr__(self, name):
        value = getattr(self._torch, name)
        if name not in ("rand", "empty", "empty_like"):
            return value

        def on_the_cpu(*args, **kwargs):
            if kwargs.get("device") == "cuda:0":
                kwargs["device"] = "cpu"
            kwargs.pop("pin_memory", None)
            return value(*args, **kwargs)
        return on_the_cpu


def test_every_hand_loop_runs_its_gpu_code_on_torch_dressed_as_cuda():
    torch = pytest.importorskip("torch")
    figures = handloops.figures_of(_CpuAsCuda(torch), order=64, copy_bytes=4096, large_copy_bytes=8192)
    assert set(figures) == {"matmul_bfloat16", "matmul_float16", "matmul_float32", "matmul_tf32", "d2d_copy",
                            "d2d_copy_large", "h2d_pinned", "h2d_pageable"}
    assert not [name for name, figure in figures.items() if "error" in figure], figures
    bf16 = figures["matmul_bfloat16"]
    assert bf16["flops"] == 2 * 64**3 and bf16["tflops"] == pytest.approx(bf16["flops"] / bf16["median_s"] / 1e12)
    assert bf16["corner_rel_error"] < 2e-2 and figures["matmul_float32"]["corner_rel_error"] < 1e-5
    assert figures["d2d_copy"]["identical"] and figures["d2d_copy"]["bytes_moved"] == 2 * 4096
    assert figures["h2d_pinned"]["identical"] and figures["h2d_pinned"]["pinned"]
    assert not figures["h2d_pageable"]["pinned"] and figures["d2d_copy_large"]["bytes"] == 8192


def test_a_failing_loop_is_recorded_and_the_others_still_run():
    torch = pytest.importorskip("torch")
    fake = _CpuAsCuda(torch)
    real_matmul = torch.matmul

    def matmul(a, b, out=None):
        if a.dtype == torch.float16:
            raise RuntimeError("CUBLAS_STATUS_NOT_SUPPORTED")
        return real_matmul(a, b, out=out)
    fake.matmul = matmul
    figures = handloops.figures_of(fake, order=32, copy_bytes=4096, large_copy_bytes=4096)
    assert figures["matmul_float16"] == {"error": "RuntimeError: CUBLAS_STATUS_NOT_SUPPORTED"}
    assert "tflops" in figures["matmul_bfloat16"] and "tb_per_s" in figures["d2d_copy"]
