"""Make tests/data/runs/h200.json: the GPU run of the recorded-runs text test, from real H200 figures.

No GPU answered where the other documents of this folder were recorded, so this one is built from
run 2 of docs/gpu-results.md ("Measured", 2026-12-04: `accelbench run ... --device cuda:0 --backend
torch` on an NVIDIA H200 SXM, 700 W, driver 580.159.04, torch 2.11.0+cu130). From that summary come
each result's spec, its median time per call, its 95% interval and its verdict (all valid, every
check passed, cuda:0 read from its own arrays). What the summary does not hold is made up here and
said so: 21 samples per result spread evenly so that their median is the summary's and their
order-statistic interval about its own; the checks' errors (a tenth of a tolerance: the summary
says only "passed"); the inventory's cuda:0 (tests/data/nvml/h200.json through the real NVML probe,
its driver set to the run's). The run measured nothing on the CPU (the GPU check names cuda:0
only), as the real one did: the document has no CPU result and invents none.

    python tests/data/runs/make_h200.py        # writes h200.json next to this script
"""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))  # tests/, for recorded_gpus

from recorded_gpus import nvml_devices  # noqa: E402

from accelbench.results import Check, Measurement, Spec  # noqa: E402
from accelbench.store.db import Store  # noqa: E402
from accelbench.store.export import export_runs, write_json  # noqa: E402
from accelbench.workloads.registry import get_workload  # noqa: E402

MIB = 2**20
RUN_ID = "20261204-172643-h200r2"
# (workload, params, median ms a call, 95% CI low and high of the rate) from run 2's summary.txt
SUMMARY = [
    ("matmul", {"dtype": "float32", "n": 2048}, 0.344, 49.9, 50.1),
    ("matmul", {"dtype": "float32", "n": 4096}, 2.69, 50.7, 51.2),
    ("matmul", {"dtype": "float32", "n": 8192}, 21.5, 50.9, 51.1),
    ("matmul", {"dtype": "float16", "n": 2048}, 0.0257, 666.7, 670.9),
    ("matmul", {"dtype": "float16", "n": 4096}, 0.21, 643.7, 666.8),
    ("matmul", {"dtype": "float16", "n": 8192}, 1.45, 757.7, 760.0),
    ("matmul", {"dtype": "bfloat16", "n": 2048}, 0.025, 684.0, 688.1),
    ("matmul", {"dtype": "bfloat16", "n": 4096}, 0.202, 668.4, 692.5),
    ("matmul", {"dtype": "bfloat16", "n": 8192}, 1.6, 676.2, 700.0),
    ("stream", {"dtype": "float64", "kernel": "copy", "n": 2**23}, 0.0347, 3.86, 3.87),
    ("stream", {"dtype": "float64", "kernel": "triad", "n": 2**23}, 0.0509, 3.95, 3.97),
    ("memcpy", {"bytes": 64 * MIB, "direction": "h2d", "dtype": "float32", "pinned": False}, 7.33, 8.90, 9.29),
    ("memcpy", {"bytes": 64 * MIB, "direction": "h2d", "dtype": "float32", "pinned": True}, 1.22, 54.9, 55.0),
    ("memcpy", {"bytes": 64 * MIB, "direction": "d2h", "dtype": "float32", "pinned": False}, 3.97, 16.7, 17.1),
    ("memcpy", {"bytes": 64 * MIB, "direction": "d2h", "dtype": "float32", "pinned": True}, 1.23, 54.2, 54.5),
    ("memcpy", {"bytes": 64 * MIB, "direction": "d2d", "dtype": "float32", "pinned": False}, 0.035, 3.83, 3.85),
]
SAMPLES = 21  # the interval of the median of 21 samples lies between the 6th and the 16th


def samples(median_s: float, low_s: float, high_s: float) -> tuple[float, ...]:
    """21 evenly spaced times: the 11th is the median, the 6th and the 16th about the interval's ends."""
    half = max(median_s - low_s, high_s - median_s, median_s * 1e-4)
    return tuple(median_s + 2 * half * (k - SAMPLES // 2) / (SAMPLES - 1) for k in range(SAMPLES))


def measurement(workload: str, params: dict, median_ms: float, rate_low: float, rate_high: float) -> Measurement:
    median_s = median_ms / 1e3
    # the rate's interval read as a time's: the faster end of the rate is the shorter time
    low_s, high_s = median_s * (rate_low + rate_high) / 2 / rate_high, median_s * (rate_low + rate_high) / 2 / rate_low
    spec = Spec.make(workload, "torch", "cuda:0", **params)
    tolerance = 1e-2 if params.get("dtype") in ("float16", "bfloat16") else 1e-5
    exact = workload in ("stream", "memcpy") and params.get("kernel", "copy") == "copy"
    check = Check(True, 0.0 if exact else tolerance / 10, tolerance, "within tolerance (replayed)", "cuda:0")
    return Measurement(spec=spec, phases_s={"compute": samples(median_s, low_s, high_s)}, first_call_s=median_s * 40,
                       work=get_workload(workload).work(params), check=check, target_met=True, verdict="valid")


def machine() -> dict:
    (gpu, *_) = nvml_devices("h200")
    record = gpu.to_dict()
    record["properties"] = {**record["properties"], "driver_version": "580.159.04", "cuda_driver_version": "13.0"}
    cpu = {"id": "cpu", "kind": "cpu", "vendor": "Intel", "name": "Intel Xeon (16 cores)", "source": "procfs",
           "properties": {"physical_cores": 16, "logical_cores": 16, "usable_cpus": 16}}
    return {"hostname": "h200-node", "os": "Linux", "python": "3.12.3",
            "inventory": {"schema_version": 1, "devices": [cpu, record]},
            "software": {"accelbench": "0.1.0", "python": "3.12.3", "torch": "2.11.0+cu130", "cuda": "13.0",
                         "cudnn": "91900"},
            "environment": {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}, "unreached_devices": []}


def main() -> None:
    selection = {"workloads": ["matmul", "stream", "memcpy"], "devices": "cuda:0", "backends": "torch",
                 "rigor": "standard", "source": "docs/gpu-results.md, run 2 (replayed)"}
    with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "h200.sqlite") as store:
        store.restore_run(RUN_ID, started_at="2026-12-04T17:23:54Z", finished_at="2026-12-04T17:26:30Z",
                          status="complete", accelbench_version="0.1.0", selection=selection, machine=machine(),
                          tags={"replayed_from": "docs/gpu-results.md"},
                          results=tuple(measurement(*row) for row in SUMMARY), skips=())
        document = export_runs(store, [RUN_ID])
    write_json(HERE / "h200.json", document)


if __name__ == "__main__":
    main()
