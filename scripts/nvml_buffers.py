"""What NVML's sample buffers deliver on this board, idle and under load: for the telemetry source.

    python3 scripts/nvml_buffers.py OUT.json [--seconds 3]

Polls every sample buffer accelbench drains (nvmlDeviceGetSamples, from the newest timestamp seen)
and the matching direct reads every 100 ms, first idle, then while a bfloat16 matmul loop keeps GPU 0
busy. Writes, per buffer: how many samples each poll got, their spacing and values, and the errors.
Standard library, nvidia-ml-py and (for the load) torch; it does not import accelbench.
"""
from __future__ import annotations

import json
import statistics
import sys
import threading
import time

KINDS = {"total_power": "NVML_TOTAL_POWER_SAMPLES", "gpu_utilization": "NVML_GPU_UTILIZATION_SAMPLES",
         "memory_utilization": "NVML_MEMORY_UTILIZATION_SAMPLES", "processor_clock": "NVML_PROCESSOR_CLK_SAMPLES",
         "memory_clock": "NVML_MEMORY_CLK_SAMPLES"}
FIELDS = {0: "dVal", 1: "uiVal", 2: "ulVal", 3: "ullVal", 4: "sllVal", 5: "siVal", 6: "usVal"}
POLL_S = 0.1


def watch(nv, handle, seconds: float) -> dict:
    last = {}
    for kind, name in KINDS.items():  # drain what was there before, as accelbench does at open
        try:
            _, raw = nv.nvmlDeviceGetSamples(handle, getattr(nv, name), 0)
            last[kind] = max((int(s.timeStamp) for s in raw), default=0)
        except nv.NVMLError as exc:
            last[kind] = 0
            last[kind + "_open_error"] = str(exc)
    polls = {kind: [] for kind in KINDS}
    direct = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for kind, name in KINDS.items():
            try:
                value_type, raw = nv.nvmlDeviceGetSamples(handle, getattr(nv, name), last[kind])
                got = [(int(s.timeStamp), float(getattr(s.sampleValue, FIELDS.get(int(value_type), "uiVal"))))
                       for s in raw if int(s.timeStamp) > last[kind]]
                if got:
                    last[kind] = max(t for t, _ in got)
                polls[kind].append({"n": len(got), "values": [v for _, v in got][:8], "t_us": [t for t, _ in got][:8]})
            except nv.NVMLError as exc:
                polls[kind].append({"error": str(exc)})
        row = {"t": time.time()}
        for what, call in (("sm_clock", lambda: nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_SM)),
                           ("mem_clock", lambda: nv.nvmlDeviceGetClockInfo(handle, nv.NVML_CLOCK_MEM)),
                           ("power_mw", lambda: nv.nvmlDeviceGetPowerUsage(handle)),
                           ("utilization", lambda: nv.nvmlDeviceGetUtilizationRates(handle).gpu)):
            try:
                row[what] = int(call())
            except nv.NVMLError as exc:
                row[what] = str(exc)
        direct.append(row)
        time.sleep(POLL_S)
    summary = {}
    for kind, rows in polls.items():
        counts = [r.get("n", 0) for r in rows]
        stamps = [t for r in rows for t in r.get("t_us", [])]
        gaps = [(b - a) / 1e3 for a, b in zip(stamps, stamps[1:])]
        summary[kind] = {"polls": len(rows), "polls_with_samples": sum(c > 0 for c in counts),
                         "samples": sum(counts), "errors": sorted({r["error"] for r in rows if "error" in r}),
                         "median_gap_ms": statistics.median(gaps) if gaps else None,
                         "values": sorted({v for r in rows for v in r.get("values", [])})[:20],
                         "open_error": last.get(kind + "_open_error")}
    return {"buffers": summary, "direct": direct[:: max(1, len(direct) // 10)]}


def main(argv: list[str]) -> int:
    out = argv[0]
    seconds = float(argv[argv.index("--seconds") + 1]) if "--seconds" in argv else 3.0
    import pynvml as nv

    nv.nvmlInit()
    handle = nv.nvmlDeviceGetHandleByIndex(0)
    report = {"driver": nv.nvmlSystemGetDriverVersion(), "name": nv.nvmlDeviceGetName(handle),
              "idle": watch(nv, handle, seconds)}
    import torch

    stop = threading.Event()
    a = torch.rand(8192, 8192, device="cuda", dtype=torch.bfloat16)

    def load() -> None:
        while not stop.is_set():
            for _ in range(20):
                a @ a
            torch.cuda.synchronize()

    worker = threading.Thread(target=load)
    worker.start()
    try:
        report["busy"] = watch(nv, handle, seconds)
    finally:
        stop.set()
        worker.join()
    nv.nvmlShutdown()
    with open(out, "w") as handle_out:
        json.dump(report, handle_out, indent=1)
    for phase in ("idle", "busy"):
        for kind, found in report[phase]["buffers"].items():
            print(phase, kind, json.dumps(found))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
