"""summary.txt for scripts/gpu_check.sh: one line per check, PASS / FAIL / SKIP / INFO, with its figures.

Reads what the check wrote into its output folder (mode.json, info.json, run-*.json, peak.json,
hand.json, gpu-tests.xml, report/report.html, steps.tsv): first the tutorials' answers
(scripts/gpu_answers.py: CPU against GPU per workload with intervals, break-even, the peak pair,
deviceQuery), then accelbench's figures against the hand-written loops of scripts/gpu_handloops.py. Standard library only: it runs wherever the
check ran, and tests/unit/test_gpu_summary.py replays recorded H200-like outputs through it.

    python3 scripts/gpu_summary.py OUT_DIR      # writes OUT_DIR/summary.txt and summary.json

Exit status 1 when any line is FAIL; without a GPU every GPU line is "SKIP: no GPU" and counts as no failure.
"""
from __future__ import annotations

import json
import sys
import time
import xml.etree.ElementTree as ElementTree
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling, also when loaded by path (tests)
from gpu_answers import Line, answer_lines, number, peak_line, skipped_answer_names  # noqa: E402

DEVICE = "cuda:0"
MATMUL_ORDER = 8192
MATMUL_TOLERANCE = 0.02     # accelbench's bf16 matmul within ±2% of the hand loop
COPY_TOLERANCE = 0.05       # a 64 MiB device copy lasts ~30 µs: launch and sync are a larger share
PINNED_TOLERANCE = 0.10     # host links vary more from one transfer to the next
H200_DENSE_BF16_TFLOPS = 989.0
PEAK_SOURCE = "NVIDIA H200 Tensor Core GPU datasheet (2024), SXM: 1,979 with sparsity, halved"
NVML_METRICS = {"clock": ("sm_clock_mhz",), "power": ("power_w", "power_from_energy_w"),
                "utilisation": ("utilization_percent",)}
BACKEND = "torch"           # the backend the hand loops and the engine's own lines compare


def relative_difference(measured: float, reference: float) -> float:
    """(measured - reference) / reference: +0.01 is 1% above the reference."""
    return (measured - reference) / reference


def rule(tolerance: float, reference: dict | None) -> tuple[float, str]:
    """The agreement rule: ±tolerance, or half the hand loop's own spread (max − min over its
    median, across its repeats) when that is wider. A power-capped H200 moved its bf16 hand loop by
    15% between repeats (SM clock 1,530–1,980 MHz): a smaller gap is no evidence of mis-timing."""
    spread = float((reference or {}).get("spread") or 0.0)
    if spread / 2 <= tolerance:
        return tolerance, f"rule ±{tolerance:.0%}"
    repeats = (reference or {}).get("repeats", "its")
    return spread / 2, f"rule ±{spread / 2:.1%}: half the hand loop's spread of {spread:.1%} over {repeats} loops"


def agreement(name: str, measured: float, reference: float, tolerance: float, unit: str, what: str,
              reference_figure: dict | None = None) -> Line:
    """PASS when `measured` (accelbench) is within the rule (see `rule`) of `reference` (the hand loop)."""
    difference = relative_difference(measured, reference)
    allowed, said = rule(tolerance, reference_figure)
    status = "PASS" if abs(difference) <= allowed else "FAIL"
    return Line(name, status, f"accelbench {number(measured)} {unit} vs hand loop {number(reference)} {unit} "
                              f"({difference:+.1%}, {said}){what}")


class Evidence:
    """The files one check wrote, read once; anything missing reads as None."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.mode = self._json("mode.json") or {}
        self.info = self._json("info.json")
        self.hand = self._json("hand.json") or {}
        self.peak = self._json("peak.json")
        self.runs = {path.stem: doc for path in sorted(folder.glob("run-*.json"))
                     if (doc := self._json(path.name)) is not None}
        self.steps = _steps(folder / "steps.tsv")

    def _json(self, name: str) -> Any:
        try:
            return json.loads((self.folder / name).read_text())
        except (OSError, ValueError):
            return None

    @property
    def gpu(self) -> bool:
        return bool(self.mode.get("gpu"))

    @property
    def no_gpu(self) -> str:
        return f"no GPU ({self.mode.get('reason') or 'mode.json missing: the GPU was never detected'})"

    def results(self, device: str | None = DEVICE, backend: str | None = None) -> list[dict]:
        return [r for doc in self.runs.values() for r in doc.get("results", [])
                if (device is None or r["spec"]["device"] == device)
                and (backend is None or r["spec"]["backend"] == backend)]

    def result(self, workload: str, **params: Any) -> dict | None:
        """The one torch result of `workload` on cuda:0 whose parameters include `params`."""
        for r in self.results(backend=BACKEND):
            if r["spec"]["workload"] == workload and all(r["spec"]["params"].get(k) == v for k, v in params.items()):
                return r
        return None

    def hand_figure(self, key: str) -> dict | None:
        figure = self.hand.get("figures", {}).get(key)
        return figure if figure and "error" not in figure else None


def _steps(path: Path) -> list[tuple[str, int, float]]:
    """steps.tsv: name, exit status, seconds (one line per step the shell script ran)."""
    steps = []
    try:
        for row in path.read_text().splitlines():
            name, rc, seconds = row.split("\t")
            steps.append((name, int(rc), float(seconds)))
    except (OSError, ValueError):
        pass
    return steps


def rate(result: dict) -> tuple[float, float, float]:
    """(median, low, high) rate in the result's own unit (GFLOP/s or GB/s), the interval from the
    95% CI of the median time."""
    derived = result["derived"]
    median_rate, median_s = derived["rate"], derived["median_s"]
    low_s, high_s = derived.get("ci_low_s") or median_s, derived.get("ci_high_s") or median_s
    return median_rate, median_rate * median_s / high_s, median_rate * median_s / low_s


def figure_text(result: dict) -> str:
    """'781.2 TFLOP/s (95% CI 779.0–783.1), valid': unit, spread and verdict together."""
    median, low, high = rate(result)
    unit = result["derived"]["rate_unit"]
    scale, shown = (1e3, unit.replace("G", "T", 1)) if median >= 1e3 else (1.0, unit)
    verdict = result.get("verdict", "?")
    if not result["check"]["passed"]:
        verdict += f", check FAILED: {result['check']['detail']}"
    per_call = f"{result['derived']['median_s'] * 1e3:,.3g} ms a call"
    return (f"{number(median / scale)} {shown} (95% CI {number(low / scale)}–{number(high / scale)}), "
            f"{per_call}, {verdict}")


def counts(result: dict | None) -> bool:
    return result is not None and bool(result["check"]["passed"]) and result.get("verdict") != "invalid"


def _result_line(name: str, results: Sequence[dict | None], labels: list[str], missing: str) -> Line:
    present = [(label, r) for label, r in zip(labels, results) if r is not None]
    if not present:
        return Line(name, "FAIL", f"no result: {missing}")
    status = "PASS" if all(counts(r) for _, r in present) and len(present) == len(results) else "FAIL"
    absent = [label for label, r in zip(labels, results) if r is None]
    text = "; ".join(f"{label} {figure_text(r)}" for label, r in present)
    return Line(name, status, text + (f"; missing: {', '.join(absent)}" if absent else ""))


def gpu_test_lines(evidence: Evidence) -> list[Line]:
    path = evidence.folder / "gpu-tests.xml"
    try:
        suite = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as error:
        return [Line("GPU-marked tests", "FAIL", f"no junit results ({error}); see gpu-tests.txt")]
    found = suite if suite.tag == "testsuite" else suite.find("testsuite")
    if found is None:
        return [Line("GPU-marked tests", "FAIL", "gpu-tests.xml holds no testsuite; see gpu-tests.txt")]
    suite = found
    total, failed = int(suite.get("tests", 0)), int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    skipped = int(suite.get("skipped", 0))
    figures = f"{total - failed - skipped} passed, {failed} failed, {skipped} skipped of {total}"
    if failed:
        return [Line("GPU-marked tests", "FAIL", f"{figures}; gpu-tests.txt has the failures")]
    if not evidence.gpu:
        return [Line("GPU-marked tests", "SKIP", f"{evidence.no_gpu}: {figures}")]
    if total == skipped:
        return [Line("GPU-marked tests", "FAIL", f"{figures}: a GPU was detected but every test skipped itself")]
    return [Line("GPU-marked tests", "PASS", figures)]


def inventory_line(evidence: Evidence) -> Line:
    if evidence.info is None:
        return Line("inventory (info --all --json)", "FAIL", "info.json missing or not JSON; see info.log")
    devices = {d["id"]: d for d in evidence.info.get("devices", [])}
    listed = ", ".join(devices) or "none"
    if not evidence.gpu:
        return Line("inventory (info --all --json)", "PASS", f"devices: {listed}; {evidence.no_gpu}")
    gpu = devices.get(DEVICE)
    if gpu is None:
        return Line("inventory (info --all --json)", "FAIL", f"{DEVICE} not in the inventory; devices: {listed}")
    memory = gpu.get("memory_bytes") or 0
    return Line("inventory (info --all --json)", "PASS",
                f"{DEVICE} {gpu['name']}, {memory / 2**30:.0f} GiB, reached by {', '.join(gpu.get('reach', {}))}")


def workload_lines(evidence: Evidence) -> list[Line]:
    lines = []
    for dtype in ("float32", "float16", "bfloat16"):
        found = sorted((r for r in evidence.results(backend=BACKEND) if r["spec"]["workload"] == "matmul"
                        and r["spec"]["params"].get("dtype") == dtype), key=lambda r: r["spec"]["params"]["n"])
        lines.append(_result_line(f"matmul {dtype}", found if found else [None], [f"n={r['spec']['params']['n']}" for r in found]
                                  or ["n=8192"], "see run-matmul.log"))
    tf32, strict = evidence.hand_figure("matmul_tf32"), evidence.hand_figure("matmul_float32")
    lines.append(Line("matmul tf32", "INFO", "accelbench's float32 matmul is strict fp32 (TF32 off, so its fp32 "
                                             "tolerance holds); hand loop n=8192: "
                      + (f"TF32 {tf32['tflops']:,.1f} TFLOP/s, strict fp32 {strict['tflops']:,.1f} TFLOP/s"
                         if tf32 and strict else "not measured (hand.json)")))
    kernels = sorted({r["spec"]["params"]["kernel"] for r in evidence.results(backend=BACKEND)
                      if r["spec"]["workload"] == "stream"})
    lines.append(_result_line("stream", [evidence.result("stream", kernel=k) for k in kernels] or [None],
                              kernels or ["copy"], "see run-quick-suite.log"))
    for direction, pinned, label in (("h2d", False, "h2d pageable"), ("h2d", True, "h2d pinned"),
                                     ("d2h", False, "d2h pageable"), ("d2h", True, "d2h pinned"),
                                     ("d2d", False, "d2d (read+write)")):
        found = [r for r in evidence.results(backend=BACKEND) if r["spec"]["workload"] == "memcpy"
                 and r["spec"]["params"].get("direction") == direction and r["spec"]["params"].get("pinned") == pinned]
        largest = max(found, key=lambda r: r["spec"]["params"]["bytes"], default=None)
        size = f"{largest['spec']['params']['bytes'] // 2**20} MiB" if largest else "largest"
        lines.append(_result_line(f"memcpy {label}", [largest], [size], "see run-quick-suite.log"))
    return lines


def comparison_lines(evidence: Evidence) -> list[Line]:
    lines = []
    mine, hand = evidence.result("matmul", dtype="bfloat16", n=MATMUL_ORDER), evidence.hand_figure("matmul_bfloat16")
    name = f"bf16 matmul n={MATMUL_ORDER} vs hand loop"
    if mine is None or hand is None:
        lines.append(Line(name, "FAIL", f"missing: {'accelbench result' if mine is None else 'hand loop'}"))
    else:
        tflops = rate(mine)[0] / 1e3
        share = tflops / H200_DENSE_BF16_TFLOPS
        own = mine["derived"].get("percent_of_datasheet_peak")
        lines.append(agreement(name, tflops, hand["tflops"], MATMUL_TOLERANCE, "TFLOP/s",
                               f"; {share:.1%} of the {H200_DENSE_BF16_TFLOPS:g} TFLOP/s dense peak ({PEAK_SOURCE})"
                               + (f"; accelbench's own share: {own:.1f}% of the inventory's peak" if own else ""),
                               hand))
    copies = [r for r in evidence.results(backend=BACKEND) if r["spec"]["workload"] == "memcpy"
              and r["spec"]["params"].get("direction") == "d2d"]
    mine = max(copies, key=lambda r: r["spec"]["params"]["bytes"], default=None)
    hand, large = evidence.hand_figure("d2d_copy"), evidence.hand_figure("d2d_copy_large")
    name = "d2d copy vs hand loop"
    if mine is None or hand is None:
        lines.append(Line(name, "FAIL", f"missing: {'accelbench d2d result' if mine is None else 'hand loop'}"))
    elif mine["spec"]["params"]["bytes"] != hand["bytes"]:
        lines.append(Line(name, "FAIL", f"sizes differ: accelbench {mine['spec']['params']['bytes']} B, "
                                        f"hand loop {hand['bytes']} B"))
    else:
        extra = f"; 1 GiB hand loop {large['tb_per_s']:.2f} TB/s" if large else ""
        lines.append(agreement(name, rate(mine)[0] / 1e3, hand["tb_per_s"], COPY_TOLERANCE, "TB/s",
                               f" at {hand['bytes'] // 2**20} MiB, read+write counted{extra}", hand))
    lines.append(pinned_line(evidence))
    return lines


def pinned_line(evidence: Evidence) -> Line:
    """Pinned h2d must beat pageable, and agree with the hand loop's pinned figure."""
    name = "h2d pinned vs pageable"

    def largest(pinned: bool) -> dict | None:
        found = [r for r in evidence.results(backend=BACKEND) if r["spec"]["workload"] == "memcpy"
                 and r["spec"]["params"].get("direction") == "h2d" and r["spec"]["params"].get("pinned") == pinned]
        return max(found, key=lambda r: r["spec"]["params"]["bytes"], default=None)

    pinned, pageable = largest(True), largest(False)
    hand_pinned, hand_pageable = evidence.hand_figure("h2d_pinned"), evidence.hand_figure("h2d_pageable")
    if pinned is None or pageable is None or hand_pinned is None or hand_pageable is None:
        return Line(name, "FAIL", "missing: accelbench h2d results or hand loops (run-suite.json, hand.json)")
    mine_pinned, mine_pageable = rate(pinned)[0], rate(pageable)[0]
    difference = relative_difference(mine_pinned, hand_pinned["gb_per_s"])
    faster = mine_pinned > mine_pageable
    allowed, said = rule(PINNED_TOLERANCE, hand_pinned)
    status = "PASS" if faster and abs(difference) <= allowed else "FAIL"
    return Line(name, status,
                f"accelbench pinned {mine_pinned:,.1f} GB/s, pageable {mine_pageable:,.1f} GB/s "
                f"(×{mine_pinned / mine_pageable:.2f}); hand loop pinned {hand_pinned['gb_per_s']:,.1f} GB/s, "
                f"pageable {hand_pageable['gb_per_s']:,.1f} GB/s (×{hand_pinned['gb_per_s'] / hand_pageable['gb_per_s']:.2f}); "
                f"pinned {difference:+.1%} vs hand loop ({said}, and pinned faster)")


def trust_lines(evidence: Evidence) -> list[Line]:
    results = evidence.results()
    if not results:
        return [Line(name, "FAIL", "no result on cuda:0 to read it from")
                for name in ("NVML telemetry", "synchronisation probe", "placement observed")]
    lines = [telemetry_line(evidence.result("matmul", dtype="bfloat16", n=MATMUL_ORDER) or results[0])]
    refused = [r for r in results if any("refused for timing" in reason or "synchronisation untested" in reason
                                         for reason in r.get("verdict_reasons", []))]
    lines.append(Line("synchronisation probe", "FAIL" if refused else "PASS",
                      f"{len(refused)} of {len(results)} results on {DEVICE} refused or untested"
                      + (f": {refused[0]['verdict_reasons'][0]}" if refused else
                         ": synchronize() proved to wait (no result refused for timing)")))
    elsewhere = [r for r in results if r["check"].get("device_seen") != DEVICE]
    lines.append(Line("placement observed", "FAIL" if elsewhere else "PASS",
                      f"{len(results) - len(elsewhere)} of {len(results)} results read {DEVICE} from their own arrays"
                      + (f"; {elsewhere[0]['spec']['workload']} ran on {elsewhere[0]['check'].get('device_seen')}"
                         if elsewhere else "")))
    tally: dict[str, int] = {}
    for r in results:
        tally[r.get("verdict", "?")] = tally.get(r.get("verdict", "?"), 0) + 1
    lines.append(Line("verdicts on cuda:0", "INFO", ", ".join(f"{n} {v}" for v, n in sorted(tally.items()))))
    return lines


def telemetry_line(result: dict) -> Line:
    name = "NVML telemetry"
    device = (result.get("telemetry") or {}).get("devices", {}).get(DEVICE)
    if not device:
        return Line(name, "FAIL", f"no {DEVICE} telemetry in {result['spec']['workload']}'s result")
    metrics = device.get("metrics", {})
    found = {what: next((m for m in keys if m in metrics), None) for what, keys in NVML_METRICS.items()}
    missing = [what for what, metric in found.items() if metric is None]
    shown = "; ".join(f"{metric} mean {metrics[metric]['mean']:,.0f} (min {metrics[metric]['min']:,.0f}, "
                      f"max {metrics[metric]['max']:,.0f})" for metric in found.values() if metric)
    return Line(name, "FAIL" if missing else "PASS",
                f"source {device.get('source')}: {shown}" + (f"; missing: {', '.join(missing)}" if missing else ""))


def summary_lines(evidence: Evidence) -> list[Line]:
    lines = [inventory_line(evidence)]
    if evidence.gpu:
        lines += answer_lines(evidence)
        lines += workload_lines(evidence) + comparison_lines(evidence) + trust_lines(evidence)
    else:
        skipped = skipped_answer_names() + [
            "matmul float32", "matmul float16", "matmul bfloat16", "matmul tf32", "stream",
            "memcpy (h2d, d2h, pinned, d2d)", f"bf16 matmul n={MATMUL_ORDER} vs hand loop", "d2d copy vs hand loop",
            "h2d pinned vs pageable", "NVML telemetry", "synchronisation probe", "placement observed"]
        lines += [Line(name, "SKIP", evidence.no_gpu) for name in skipped]
        lines.append(peak_line(evidence, "peak on this CPU (pipeline)"))
        cpu = evidence.results(device=None)
        lines.append(_result_line("CPU smoke run (pipeline)", cpu if cpu else [None],
                                  [f"{r['spec']['workload']} {r['spec']['backend']} threads={r['spec']['params'].get('threads')}" for r in cpu] or ["run"],
                                  "see run-cpu.log"))
    lines += gpu_test_lines(evidence)
    report = evidence.folder / "report" / "report.html"
    lines.append(Line("report HTML", "PASS" if report.is_file() and report.stat().st_size > 0 else "FAIL",
                      f"{report.relative_to(evidence.folder)}" + ("" if report.is_file() else " missing; see report.log")))
    lines += step_lines(evidence)
    return lines


def step_lines(evidence: Evidence) -> list[Line]:
    # the monitor runs beside another step: its seconds are already in that step's
    total = sum(seconds for name, _, seconds in evidence.steps if not name.startswith("monitor"))
    lines = [Line(f"step {name}", "FAIL", f"timed out after {seconds:.0f} s (its cap in the 8-minute budget)"
                  if seconds else "skipped: the 8-minute budget ran out before it")
             for name, rc, seconds in evidence.steps if rc in (124, 137)]
    taken = ", ".join(f"{name} {seconds:.0f} s" for name, _, seconds in evidence.steps)
    lines.append(Line("wall time", "INFO", f"{total:.0f} s in all ({taken or 'no steps.tsv'})"))
    return lines


def write_summary(lines: list[Line], folder: Path, header: str = "") -> Path:
    """summary.txt (the lines, aligned) and summary.json (the same as records)."""
    text = "".join(f"{h}\n" for h in header.splitlines()) + "".join(line.text() + "\n" for line in lines)
    (folder / "summary.txt").write_text(text)
    (folder / "summary.json").write_text(json.dumps([asdict(line) for line in lines], indent=2) + "\n")
    return folder / "summary.txt"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: gpu_summary.py OUT_DIR", file=sys.stderr)
        return 2
    folder = Path(args[0])
    evidence = Evidence(folder)
    lines = summary_lines(evidence)
    versions = ", ".join(f"{k} {v}" for k, v in (evidence.mode.get("versions") or {}).items() if v)
    mode = evidence.mode.get("device_name") if evidence.gpu else evidence.no_gpu
    driver = (evidence.hand.get("nvml") or {}).get("driver")
    when = evidence.hand.get("when") or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    header = (f"accelbench GPU check, {when}\nmode: {mode}; {versions}"
              + (f", driver {driver}" if driver else "") + "\n")
    print(write_summary(lines, folder, header).read_text(), end="")
    return 1 if any(line.status == "FAIL" for line in lines) else 0


if __name__ == "__main__":
    sys.exit(main())
