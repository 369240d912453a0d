"""The sentences a newcomer reads, rendered for a few synthetic runs (quiet, busy, PoCL, nothing
measured) and checked word for word where they once read wrong: a share rounded to "100%", advice
to use the rigor already used, a reason cut mid-phrase, a reason said twice, an untranslated
quote, a nominal clock shown as the running one."""
from __future__ import annotations

import io
from dataclasses import replace

from synthetic_runs import CPU, DEVICES, break_even_measurements, measurement

from accelbench.devices.model import Device
from accelbench.report.advice import findings
from accelbench.report.analysis import analyse
from accelbench.report.headline import headline, headline_for_run, render_headline
from accelbench.report.reason_kinds import reason_kind
from accelbench.terminal import console

POCL = Device("opencl:0:0", "opencl", "AMD", "cpu-zen4", "opencl",
              properties={"device_type": "CPU", "platform_name": "Portable Computing Language"})
BUSY_REASON = ("other processes used 48% of the 2 cores during this measurement (0.96 cores; steal 0%; our "
               "threads waited for a CPU 20% of the time)")


def _busy(m):
    """`m` measured while other programs took half the cores (as timing/contention.py records it)."""
    interference = {"compute": {"disturbed": True, "others_share": 0.48, "steal_share": 0.0, "run_wait_share": 0.2}}
    return replace(m, verdict="noisy", verdict_reasons=(BUSY_REASON,), telemetry={"interference": interference})


def _rendered(answer) -> str:
    out = io.StringIO()
    render_headline(answer, console(file=out, width=80))
    return " ".join(out.getvalue().split())  # the words, whatever the wrapping


def _pocl_stream(compute_s: float, to_device_s: float, to_host_s: float):
    triad = {"kernel": "triad", "n": 1 << 24, "dtype": "float32"}
    return [measurement("stream", "numpy", "cpu", compute_s=0.010, threads=2, **triad),
            measurement("stream", "numpy", "cpu", compute_s=0.012, threads=1, **triad),
            measurement("stream", "pyopencl", "opencl:0:0", compute_s=compute_s, to_device_s=to_device_s,
                        to_host_s=to_host_s, **triad)]


def test_quiet_run_states_its_answer_without_caveats():
    answer = headline_for_run(analyse(break_even_measurements(), DEVICES), DEVICES, {}, rigor="standard")
    text = _rendered(answer)
    assert "torch@cuda:0 (Test GPU): compute-bound (matmul float32 n=3,000) 10.0" in text
    assert "Confidence high (4 valid)." in text and answer.caveats == ()


def test_busy_run_names_the_cause_and_advises_only_what_was_not_done():
    busy = [_busy(m) if m.spec.device == "cuda:0" else m for m in break_even_measurements()]
    rows = analyse(busy, DEVICES)
    quick, rigorous = (headline_for_run(rows, DEVICES, {}, rigor=r) for r in ("quick", "rigorous"))
    assert quick.caveats[0] == (
        "Busy machine: 4 of 12 results were measured while other processes used 48% of the cores on average "
        "(noisy); close other programs or run them under `nice -n 19`, use `--rigor rigorous`, or pin with "
        "`taskset -c`.")
    assert rigorous.caveats[0] == (
        "Busy machine: 4 of 12 results were measured while other processes used 48% of the cores on average "
        "(noisy); close other programs or run them under `nice -n 19`, or pin with `taskset -c`.")
    assert rigorous.caveats[1] == ("4 of 12 results are not plainly valid (4 noisy): other processes ran "
                                   "alongside (4). Each result's verdict names why (`accelbench show`).")
    unsteady = [replace(m, target_met=False) for m in busy]  # the findings' advice fits the rigor too
    advice = " ".join(f.text for f in findings(analyse(unsteady, DEVICES), DEVICES, rigor="rigorous"))
    assert "not steady" in advice and "--rigor rigorous" not in advice


def test_pocl_transfers_that_nearly_fill_the_time_are_not_called_100_percent():
    devices = {"cpu": CPU, "opencl:0:0": POCL}
    (pocl,) = headline(analyse(_pocl_stream(0.004, 0.6, 0.396), devices)).devices
    text = " ".join(pocl.sentences())
    assert "Transfers take nearly all (99.6%) of the end-to-end time (stream n=16,777,216)." in text
    assert "100%" not in text
    (pocl,) = headline(analyse(_pocl_stream(0.010, 0.6, 0.4), devices)).devices
    assert "Transfers take 99% of the end-to-end time" in " ".join(pocl.sentences())


def test_transfers_timed_as_long_as_the_whole_call_say_the_compute_cannot_be_told_apart():
    from accelbench.report.headline import _share_text

    assert _share_text(("stream n=16,777,216", 1.0)) == (
        "transfers take all of the end-to-end time (stream n=16,777,216): timed on their own they last as long "
        "as the whole call, so the compute is too short to tell apart")


def test_nothing_measured_says_so():
    assert _rendered(headline([])) == ("The answer (each device against this machine's CPU; details below): • "
                                       "Nothing was measured in this run: there is no speed-up to state.")
    cpu_only = [m for m in break_even_measurements() if m.spec.device == "cpu"]
    assert "• No device other than the CPU baseline was measured: there is no speed-up to state." in _rendered(
        headline(analyse(cpu_only, DEVICES)))


def test_each_reason_has_a_kind_that_reads_as_a_phrase():
    kinds = {
        "our threads waited for a CPU 37% of the time during this measurement: something else ran": "our threads waited for a CPU",
        BUSY_REASON: "other processes ran alongside",
        "claims 2 threads but used 1.0 cores (CPU time / wall time)": "fewer cores used than claimed",
        "the interval missed its target": "the interval missed its target",
        "95% CI of the median is ±7.3%, over the ±5% target": "the interval missed its target",
        "to_host: the hypervisor took 12% of this machine's CPU time": "the hypervisor took CPU time",
        "faster than this device can compute: 9 TFLOP/s is 900% of its peak": "a rate beyond the device's peak",
        "check failed: relative error exceeds the tolerance": "wrong output",
        "unstable: IQR is 47% of median": "unstable timings",
        "a reason of a kind no table knows, long enough to be cut after three words": "other reasons",
    }
    assert {reason: reason_kind(reason) for reason in kinds} == kinds


def test_the_report_says_each_reason_once():
    from accelbench.report.html import _warnings_note

    reason = "check failed: relative error exceeds the tolerance"
    m = replace(measurement("matmul", "numpy", "cpu", compute_s=0.01, threads=2, n=512, dtype="float32"),
                verdict="invalid", verdict_reasons=(reason,),
                warnings=(f"invalid, time not counted: {reason}", "unstable: IQR is 12% of median"))
    (row,) = analyse([m], DEVICES)
    note = _warnings_note(row)
    assert note.count("relative error exceeds") == 1 and "warnings: unstable: IQR is 12% of median" in note


def test_the_tutorials_sources_are_quoted_with_their_english():
    from accelbench.report.compare.reference import benchmarks

    citations = [row.citation() for b in benchmarks() for row in b.rows]
    assert any("“Έτρεξε σε 4,236911058425903 δευτερόλεπτα” [in English: “Ran in 4.236911058425903 seconds”]" in c
               for c in citations)
    assert any("Ejemplo clásico de reconocimiento de imágenes MNIST [in English: 4.3) Classic example: "
               "recognising MNIST images]" in c for c in citations)


def test_a_nominal_cpu_clock_is_labelled_and_the_running_one_given():
    from accelbench.telemetry.model import DeviceInfo
    from accelbench.telemetry.cpu import _label_nominal_clock
    from accelbench.telemetry.text import frame_line, summary_lines

    info = DeviceInfo("cpu", "psutil", "Test CPU", ("frequency_mhz",))
    _label_nominal_clock(info)
    assert frame_line("12:00:00", "cpu", {"frequency_mhz": 2596.0}, 80, info.labels) == "12:00:00 cpu  Nominal clock 2,596 MHz"
    summary = {"window_s": 2.0, "interval_s": 1.0, "devices": {"cpu": {
        "source": "psutil", "name": "Test CPU", "samples": 2, "labels": info.labels, "notes": info.notes,
        "metrics": {"frequency_mhz": {"min": 2596.0, "max": 2596.0, "mean": 2596.0, "samples": 2}}}}}
    text = " ".join(" ".join(summary_lines(summary, 80)).split())
    assert "Nominal clock : Samples 2" in text or "Nominal clock: Samples 2" in text
    assert "no cpufreq driver here (usual in a VM): the nominal clock is /proc/cpuinfo's; the cores ran at about" in text


def test_a_device_without_a_comparison_says_why():
    gpu_only = [m for m in break_even_measurements() if m.spec.device == "cuda:0"]
    (gpu,) = headline(analyse(gpu_only, DEVICES)).devices
    assert gpu.sentences()[0] == ("torch@cuda:0 (cuda:0): no speed-up against the CPU could be measured: this run "
                                  "measured nothing on the CPU (measure both: `--device cpu,cuda:0`).")
    cpu_at_other_sizes = [m for m in break_even_measurements(sizes=(500,)) if m.spec.device == "cpu"]
    (gpu,) = headline(analyse(gpu_only + cpu_at_other_sizes, DEVICES)).devices
    assert gpu.sentences()[0].endswith("could be measured: the CPU ran none of the same work (workload, dtype "
                                       "and size) in this run.")


def test_a_run_without_results_prints_no_legend_of_columns_it_has_not_shown():
    from accelbench.report.summary import render_summary
    from accelbench.results import Skip, Spec

    out = io.StringIO()
    render_summary([], [Skip(Spec.make("matmul", "numpy", "cpu", n=256, dtype="float16"), "numpy has no float16 on cpu")],
                   console(file=out, width=80))
    text = " ".join(out.getvalue().split())
    assert "× columns" not in text and "Skipped (1): • numpy has no float16 on cpu: matmul numpy@cpu" in text


def test_a_skip_without_parameters_is_named_without_a_stray_space():
    """A device skipped before any parameter was chosen (each processor measured once) lists as
    "matmul pyopencl@opencl:1:0, stream …", never "matmul pyopencl@opencl:1:0 , stream"."""
    from accelbench.report.summary import render_summary
    from accelbench.results import Skip, Spec

    out = io.StringIO()
    why = "another OpenCL implementation on this same CPU"
    render_summary([], [Skip(Spec.make(w, "pyopencl", "opencl:1:0"), why) for w in ("matmul", "stream")],
                   console(file=out, width=200))
    text = " ".join(out.getvalue().split())
    assert f"{why}: matmul pyopencl@opencl:1:0, stream pyopencl@opencl:1:0" in text, text
