"""What scripts/gpu_check.sh's tutorial steps leave on an H200, replayed: run documents with
accelbench's speed-ups against the CPU, peak.json, monitor.log, the setup file, deviceQuery in
info.json. The figures are of that kind of machine (docs/gpu-results.md; the peak pair: 794
TFLOP/s at 1,980 MHz right after a warm-up, 688 sustained at ~1.6 GHz under the 700 W cap), not
a capture: no tutorial step has run on a GPU yet.

Import with `from recorded_gpu_check import write_answers, gpu_result` (tests/ on sys.path).
"""
from __future__ import annotations

import json
from pathlib import Path

from accelbench.devices.device_query import read_devices

DATA = Path(__file__).parent / "data"


def speedup(ratio: float, spread: float = 0.05) -> dict:
    """A derived.speedups entry as accelbench writes it (report/derived.speedup_dict)."""
    low, high = ratio * (1 - spread), ratio * (1 + spread)
    word = "faster" if low > 1 else "slower" if high < 1 else "no clear difference"
    shown = ratio if ratio >= 1 else 1 / ratio
    return {"ratio": ratio, "ci_low": low, "ci_high": high, "confidence": 0.95, "verdict": word, "paired": True,
            "pairs": 8, "method": "replayed", "contaminated": "",
            "text": f"{shown:.3g}× {word} [{min(low, high) if ratio >= 1 else 1 / high:.3g}–"
                    f"{high if ratio >= 1 else 1 / low:.3g}]"}


def gpu_result(workload: str, backend: str = "torch", all_cores: float | None = 10.0, one_core: float | None = 80.0,
               rate_g: float = 1e3, passed: bool = True, **params) -> dict:
    """One cuda:0 entry of `accelbench run --json`, with its speed-ups against the CPU."""
    return {"spec": {"workload": workload, "backend": backend, "device": "cuda:0", "params": params},
            "check": {"passed": passed, "detail": "within tolerance" if passed else "max error 0.5",
                      "device_seen": "cuda:0"},
            "verdict": "valid" if passed else "invalid", "verdict_reasons": [], "telemetry": {},
            "derived": {"rate": rate_g, "rate_unit": "GFLOP/s", "median_s": 1e-3, "ci_low_s": 0.99e-3,
                        "ci_high_s": 1.01e-3, "percent_of_datasheet_peak": None,
                        "speedups": {"vs_cpu_all_cores": speedup(all_cores) if all_cores else None,
                                     "vs_cpu_one_core": speedup(one_core) if one_core else None}}}


def timed_out(workload: str, threads: int, **params) -> dict:
    """A CPU spec `run --timeout` ended: stored as a failure, listed among the skips."""
    return {"spec": {"workload": workload, "backend": "torch", "device": "cpu", "params": {**params, "threads": threads}},
            "reason": "spec took longer than 15 s (the per-spec limit: --timeout, or timeout=)"}


def headline(series: str, comparisons: list[tuple[str, str, float, float]], break_even: str | None) -> dict:
    return {"devices": [{"series": series, "device": "cuda:0", "description": "NVIDIA H200",
                         "comparisons": [{"kind": kind, "what": what, "vs_cpu_all_cores": speedup(whole),
                                          "vs_cpu_one_core": speedup(one)} for kind, what, whole, one in comparisons],
                         "break_even": break_even, "transfer_share": None, "verdicts": {"valid": 12},
                         "confidence": "confidence high (12 valid)"}],
            "unreached": [], "caveats": [],
            "cpu": "CPU: Intel Xeon Platinum 8480+, 16 cores used (numpy, OpenBLAS)"}


def h200_device_query() -> dict:
    """deviceQuery's dict for an H200 SXM, read by accelbench from the recorded attributes."""
    recording = json.loads((DATA / "device_query" / "h200_sxm_datasheet.json").read_text())["devices"]

    class Recorded:
        def device_count(self):
            return 1  # the second device differs only in its PCI bus

        def values(self, field, index):
            return [recording[index][str(i)]["value"] for i in field.cuda_ids]
    devices, problems = read_devices(Recorded())
    assert not problems, problems
    return devices[0]


PEAK = {"bench": "torch@cuda:0 bfloat16", "budget_s": 120.0, "elapsed_s": 121.4, "formula_peak_flops": 989.4e12,
        "coverage": "9 of 9 grid orders and 2 neighbours of the best tried (2048, 2560, 3328, 4096, 5376, 6912, "
                    "8192, 11520, 16384, 7936, 8448); 121 s of a 120 s budget",
        "run_id": "peak-run", "trials": [],
        "maximum": {"n": 8192, "rate_flops": 794.1e12, "clock_mhz": 1980.0, "power_w": 690.0, "status": "valid",
                    "detail": "", "batches": {"count": 7, "median_flops": 794.1e12, "ci_low_flops": 790.2e12,
                                              "ci_high_flops": 797.0e12}},
        "sustained": {"n": 8192, "rate_flops": 688.2e12, "clock_mhz": 1605.0, "power_w": 700.0, "settled": True,
                      "held_s": 52.0, "windows": []},
        "final_check_passed": True, "notes": []}


def write_answers(folder: Path) -> None:
    """The tutorial steps' files in `folder`, every answer present (each line PASS or INFO)."""
    def document(name: str, results: list[dict], skips: list[dict] = (), head: dict | None = None) -> None:
        (folder / f"{name}.json").write_text(json.dumps({"run_id": name, "results": results, "skips": list(skips),
                                                         "headline": head}))

    document("run-quick-suite", [gpu_result("reduce", n=2**24, dtype="float32", all_cores=12.0, one_core=95.0)],
             head=headline("torch@cuda:0", [("compute-bound", "matmul float32 n=2,048", 41.0, 520.0),
                                            ("memory-bound", "stream triad n=2^25", 14.0, 48.0)],
                           "breaks even at n ≈ 600 with transfers"))
    document("run-seed-matmul", [gpu_result("matmul", n=n, dtype=d, all_cores=3.0 * n / 1000, one_core=40.0 * n / 1000)
                                 for d in ("float64", "float32", "float16", "bfloat16") for n in (1000, 2000, 3000)],
             head=headline("torch@cuda:0", [("compute-bound", "matmul float32 n=3,000", 9.0, 120.0)],
                           "faster from n=1,000, the smallest order measured"))
    document("run-stats", [gpu_result(w, n=2**20, dtype="float32", all_cores=6.0, one_core=50.0)
                           for w in ("montecarlo", "bootstrap", "integrate", "simstudy", "distance", "mcmc")])
    document("run-dl-train", [gpu_result(w, batch=128, dtype="float32", all_cores=8.0, one_core=60.0)
                              for w in ("mlp", "cnn", "lstm", "amp", "augment", "ddp")])
    document("run-dl-vgg-infer", [gpu_result("vgg-infer", batch=8, image_px=224, dtype="float32", layout=layout,
                                             all_cores=40.0, one_core=None)
                                  for layout in ("contiguous", "channels_last")],
             skips=[timed_out("vgg-infer", 1, batch=8, image_px=224, dtype="float32", layout="contiguous")])
    document("run-dl-transfer", [gpu_result("transfer", batch=8, image_px=224, mode=mode, all_cores=30.0, one_core=300.0)
                                 for mode in ("frozen", "full")])
    for backend in ("keras-torch", "keras-jax"):
        (folder / f"run-{backend}.log").write_text(f"accelbench run: {backend} cannot run here: keras is not "
                                                   "installed: pip install accelbench[keras]\n")
    document("run-cupy-jax", [gpu_result(w, backend=b, n=2**22, dtype="float32", all_cores=20.0, one_core=90.0)
                              for b in ("cupy", "jax") for w in ("matmul", "stream")])
    (folder / "monitor.log").write_text(
        "09:01:02 cuda:0  Utilization 100 %\n\nSummary over 30.0 s (polled every 0.5 s)\n"
        "cpu  Intel Xeon  [psutil]\n    Utilization           : Samples 60  Max 7 %  Min 5 %  Avg 6 %\n"
        "cuda:0  NVIDIA H200  [nvml]\n    Utilization           : Samples 60  Max 100 %  Min 98 %  Avg 99 %\n"
        "    SM clock              : Samples 60  Max 1,980 MHz  Min 1,530 MHz  Avg 1,620 MHz\n"
        "    Power                 : Samples 60  Max 702 W  Min 650 W  Avg 690 W\n")
    (folder / "setup-settings.toml").write_text('# accelbench settings\n[run]\ndevices = ["cuda:0"]\n')
    (folder / "peak.json").write_text(json.dumps(PEAK))
    info = json.loads((folder / "info.json").read_text())
    for device in info["devices"]:
        if device["id"] == "cuda:0":
            device["properties"] = {"device_query": h200_device_query(), "device_query_source": "cupy 13.3.0"}
    (folder / "info.json").write_text(json.dumps(info))
