"""The tutorials' answers in summary.txt: CPU against GPU per workload, break-even sizes, the peak
pair, deviceQuery, and the steps around them (monitor, setup, keras, CuPy and JAX).

Read from what scripts/gpu_check.sh wrote (run-*.json, peak.json, info.json, monitor.log,
setup-settings.toml, steps.tsv); every speed-up is accelbench's own (derived.speedups of a cuda:0
result against the CPU of the same run), quoted with its 95% interval. Standard library only, like
scripts/gpu_summary.py, which imports this module.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

DEVICE = "cuda:0"
NAME_WIDTH = 33
SEED_ORDERS = (1000, 2000, 3000)
SEED_DTYPES = ("float64", "float32", "float16", "bfloat16")
STATS_WORKLOADS = ("montecarlo", "bootstrap", "integrate", "simstudy", "distance", "mcmc")
# (workload, the run file it is in): the deep-learning tutorials, at their sizes
DL_WORKLOADS = (("mlp", "run-dl-train"), ("cnn", "run-dl-train"), ("lstm", "run-dl-train"),
                ("amp", "run-dl-train"), ("augment", "run-dl-train"), ("ddp", "run-dl-train"),
                ("vgg-infer", "run-dl-vgg-infer"), ("transfer", "run-dl-transfer"))
KERAS_BACKENDS = ("keras-torch", "keras-jax")
# deviceQuery's fields the summary names (devices/device_query.py reads them all)
QUERY_SHOWN = (("compute_capability", "cc"), ("multiprocessor_count", "SMs"), ("warp_size", "warp"),
               ("max_threads_per_block", "threads/block"), ("max_threads_per_multiprocessor", "threads/SM"),
               ("shared_memory_per_block_bytes", "smem/block"), ("shared_memory_per_multiprocessor_bytes", "smem/SM"),
               ("registers_per_block", "regs/block"), ("l2_cache_bytes", "L2"), ("async_engine_count", "copy engines"),
               ("concurrent_kernels", "concurrent kernels"), ("unified_addressing", "unified addressing"),
               ("compute_mode", "compute mode"), ("kernel_exec_timeout", "kernel time limit"))


@dataclass(frozen=True)
class Line:
    name: str
    status: str     # PASS, FAIL, SKIP or INFO
    detail: str

    def text(self) -> str:
        return f"{self.name:<{NAME_WIDTH}} {self.status}: {self.detail}"


def number(value: float) -> str:
    """Three significant figures or more: 4.02, 52.0, 781.0, 1,830.0."""
    return f"{value:,.2f}" if abs(value) < 10 else f"{value:,.1f}"


def _size(value: Any) -> str:
    if not isinstance(value, int) or isinstance(value, bool):
        return str(value)
    for unit, scale in (("MiB", 2**20), ("KiB", 2**10)):
        if value >= scale and value % (scale // 16) == 0:
            return f"{value / scale:g} {unit}"
    return f"{value:,} B"


def _shown(value: Any) -> str:
    return "yes" if value is True else "no" if value is False else str(value)


def _params(result: dict, hidden: Iterable[str] = ("threads",)) -> str:
    return " ".join(f"{k}={v}" for k, v in sorted(result["spec"]["params"].items()) if k not in hidden)


def _speedup(result: dict, side: str) -> str | None:
    """accelbench's own phrase for a cuda:0 result against the CPU: '12.3× faster [11.9–12.8]'."""
    found = ((result.get("derived") or {}).get("speedups") or {}).get(f"vs_cpu_{side}")
    return found.get("text") if found else None


def _counts(result: dict) -> bool:
    return bool(result["check"]["passed"]) and result.get("verdict") != "invalid"


def _gpu_results(doc: dict | None, workload: str, backend: str | None = None) -> list[dict]:
    return [r for r in (doc or {}).get("results", []) if r["spec"]["workload"] == workload
            and r["spec"]["device"] == DEVICE and (backend is None or r["spec"]["backend"] == backend)]


def _not_measured(doc: dict | None, workload: str) -> list[str]:
    """Specs of `workload` the run stored as skipped or failed (a CPU side past --timeout, ...)."""
    out = []
    for skip in (doc or {}).get("skips", []):
        spec = skip.get("spec") or {}
        if spec.get("workload") != workload:
            continue
        threads = (spec.get("params") or {}).get("threads")
        where = f"{spec.get('backend')}@{spec.get('device')}" + (f" {threads} thread(s)" if threads else "")
        out.append(f"{where}: {str(skip.get('reason', '')).splitlines()[0][:90]}")
    return out


def comparison_line(name: str, doc: dict | None, workload: str, backend: str | None = None,
                    missing: str = "") -> Line:
    """Each cuda:0 result of `workload` against the CPU's all cores and one core, with intervals.
    PASS when every one counts and has its all-cores speed-up; the specs left unmeasured are named."""
    results = _gpu_results(doc, workload, backend)
    gaps = _not_measured(doc, workload)
    if not results:
        why = "; ".join(gaps[:2]) or missing or "no cuda:0 result"
        return Line(name, "FAIL", f"not measured: {why}")
    parts, complete = [], True
    for r in results:
        whole, one = _speedup(r, "all_cores"), _speedup(r, "one_core")
        complete &= _counts(r) and whole is not None
        verdict = r.get("verdict", "?") if _counts(r) else f"check FAILED: {r['check'].get('detail')}"
        parts.append(f"{r['spec']['backend']} {_params(r)}: vs all cores {whole or 'none'}, "
                     f"vs one core {one or 'none'} ({verdict})")
    tail = f"; not measured: {'; '.join(gaps[:3])}" if gaps else ""
    return Line(name, "PASS" if complete else "FAIL", "; ".join(parts) + tail)


def headline_lines(evidence: Any, stem: str, label: str) -> list[Line]:
    """The run's own answer (its headline) for cuda:0: the comparisons, break-even and confidence;
    `label` ("quick suite") tells the runs' lines apart."""
    doc = evidence.runs.get(stem)
    devices = [d for d in ((doc or {}).get("headline") or {}).get("devices", []) if d.get("device") == DEVICE]
    if not devices:
        why = "run missing (see %s.log)" % stem if doc is None else "the run holds no cuda:0 answer"
        return [Line(f"answer ({label})", "FAIL", why)]
    lines = []
    for device in devices:
        parts = [f"{c['kind']} {c['what']}: vs all cores {(c.get('vs_cpu_all_cores') or {}).get('text', 'none')}, "
                 f"vs one core {(c.get('vs_cpu_one_core') or {}).get('text', 'none')}"
                 for c in device.get("comparisons", [])]
        status = "PASS" if any(c.get("vs_cpu_all_cores") for c in device.get("comparisons", [])) else "FAIL"
        lines.append(Line(f"answer {device['series']} ({label})", status,
                          "; ".join(parts + [device.get("confidence", "")]) or "no comparison"))
        if device.get("break_even"):
            lines.append(Line(f"break-even {device['series']} ({label})", "INFO", device["break_even"]))
    cpu = ((doc or {}).get("headline") or {}).get("cpu")
    if cpu:
        lines.append(Line(f"CPU baseline ({label})", "INFO", cpu))
    return lines


def seed_matmul_lines(evidence: Any) -> list[Line]:
    doc = evidence.runs.get("run-seed-matmul")
    lines = []
    for dtype in SEED_DTYPES:
        chosen = {"results": [r for r in (doc or {}).get("results", []) if r["spec"]["params"].get("dtype") == dtype],
                  "skips": [s for s in (doc or {}).get("skips", []) if (s.get("spec") or {}).get("params", {}).get("dtype") == dtype]}
        lines.append(comparison_line(f"seed matmul {dtype}", chosen, "matmul", "torch", "see run-seed-matmul.log"))
    return lines + [line for line in headline_lines(evidence, "run-seed-matmul", "seed matmul")
                    if line.name.startswith("break-even")]


def workload_lines(evidence: Any) -> list[Line]:
    lines = [comparison_line(f"statistics {w}", evidence.runs.get("run-stats"), w, "torch", "see run-stats.log")
             for w in STATS_WORKLOADS]
    lines += [comparison_line(f"DL {w}", evidence.runs.get(stem), w, "torch", f"see {stem}.log")
              for w, stem in DL_WORKLOADS]
    for backend in KERAS_BACKENDS:
        lines.append(_optional_backend(evidence, backend, f"run-{backend}", ("mlp", "vgg-infer")))
    for backend in ("cupy", "jax"):
        lines.append(_optional_backend(evidence, backend, "run-cupy-jax", ("matmul", "stream")))
    return lines


def _optional_backend(evidence: Any, backend: str, stem: str, workloads: tuple[str, ...]) -> Line:
    """A backend the GPU image may lack (keras, cupy, jax with CUDA): its lines, or INFO saying why not."""
    doc = evidence.runs.get(stem)
    measured = [comparison_line(f"{backend} {w}", doc, w, backend) for w in workloads if _gpu_results(doc, w, backend)]
    if measured:
        status = "FAIL" if any(line.status == "FAIL" for line in measured) else "PASS"
        return Line(f"{backend} on {DEVICE}", status, " | ".join(f"{line.name}: {line.detail}" for line in measured))
    log = evidence.folder / f"{stem}.log"
    reason = next((row.strip() for row in reversed(_read(log).splitlines()) if row.strip()), "no log")
    return Line(f"{backend} on {DEVICE}", "INFO", f"not measured here: {reason[:200]}")


def _read(path: Any) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def monitor_line(evidence: Any) -> Line:
    """PASS when monitor's summary has a cuda:0 block: its utilisation, clock and power readings."""
    text = _read(evidence.folder / "monitor.log")
    summary = text.split("Summary over", 1)[1] if "Summary over" in text else ""
    block: list[str] = []
    for row in summary.splitlines():
        if row.startswith(DEVICE):
            block = [row]
        elif block and row.startswith(" "):
            block.append(row)
        elif block:
            break
    readings = [" ".join(row.split()) for row in block[1:]
                if any(word in row for word in ("Utilization", "clock", "Power"))]
    if not block:
        return Line("monitor during a run", "FAIL", "no cuda:0 block in monitor.log's summary; see monitor.err")
    return Line("monitor during a run", "PASS", f"{' '.join(block[0].split())}: " + " | ".join(readings[:4]))


def setup_line(evidence: Any) -> Line:
    saved = _read(evidence.folder / "setup-settings.toml")
    if DEVICE in saved:
        return Line("setup --device cuda:0", "PASS", f"saved: {' '.join(saved.split())[:120]}")
    return Line("setup --device cuda:0", "FAIL", "setup-settings.toml missing or without cuda:0; see setup.err")


def _tflops(value: float | None) -> str:
    if not value:
        return "?"
    return f"{value / 1e12:,.1f} TFLOP/s" if value >= 1e12 else f"{value / 1e9:,.1f} GFLOP/s"


def _at(entry: dict) -> str:
    facts = [f"n={entry.get('n')}"]
    facts.append(f"{entry['clock_mhz']:,.0f} MHz" if entry.get("clock_mhz") else "clock unknown")
    if entry.get("power_w"):
        facts.append(f"{entry['power_w']:,.0f} W")
    return ", ".join(facts)


def peak_line(evidence: Any, name: str) -> Line:
    """accelbench peak's pair from peak.json: the maximum with its bursts' spread, the sustained
    rate with settled or not, the clock and power behind each, and the search's coverage."""
    found = evidence.peak
    if not found:
        return Line(name, "FAIL", "peak.json missing or not JSON; see peak.log")
    best, held = found.get("maximum"), found.get("sustained")
    if not best or not held:
        return Line(name, "FAIL", f"{'no maximum' if not best else 'no sustained rate'}; notes: "
                                  f"{'; '.join(found.get('notes') or []) or 'none'}")
    spread = best.get("batches") or {}
    interval = (f" (best burst's {spread['count']} batches: 95% CI {_tflops(spread['ci_low_flops'])}–"
                f"{_tflops(spread['ci_high_flops'])})" if spread.get("count") else " (one burst, no spread)")
    peak = found.get("formula_peak_flops")
    share = f", {best['rate_flops'] / peak:.0%} of the formula peak" if peak else ""
    settled = "settled" if held.get("settled") else "not settled within the budget"
    status = "PASS" if found.get("final_check_passed") else "FAIL"
    return Line(name, status, f"maximum {_tflops(best['rate_flops'])}{interval} ({_at(best)}{share}); "
                              f"sustained {_tflops(held['rate_flops'])} ({_at(held)}, {settled}, held "
                              f"{held.get('held_s', 0):.0f} s); {found.get('coverage', '')}")


def device_query_line(evidence: Any) -> Line:
    devices = {d["id"]: d for d in (evidence.info or {}).get("devices", [])}
    properties = (devices.get(DEVICE) or {}).get("properties") or {}
    query = properties.get("device_query")
    if not isinstance(query, dict):
        return Line("deviceQuery", "FAIL", f"no deviceQuery for {DEVICE}: "
                                           f"{properties.get('device_query_source') or 'not in info.json'}")
    shown = ", ".join(f"{label} {_size(query[key]) if key.endswith('_bytes') else _shown(query[key])}"
                      for key, label in QUERY_SHOWN if key in query)
    missing = [key for key, _ in QUERY_SHOWN if key not in query]
    return Line("deviceQuery", "FAIL" if missing else "PASS",
                f"via {properties.get('device_query_source')}: {shown}"
                + (f"; missing: {', '.join(missing)}" if missing else ""))


def answer_lines(evidence: Any) -> list[Line]:
    """The GPU run's answers, in the order the check gathered them (most important first)."""
    return (headline_lines(evidence, "run-quick-suite", "quick suite") + seed_matmul_lines(evidence)
            + workload_lines(evidence) + [monitor_line(evidence), setup_line(evidence),
                                          peak_line(evidence, "peak maximum/sustained"), device_query_line(evidence)])


def skipped_answer_names() -> list[str]:
    """The lines answer_lines would write, as they read without a GPU (each then SKIP)."""
    return (["answer (quick suite)"] + [f"seed matmul {d}" for d in SEED_DTYPES]
            + [f"statistics {w}" for w in STATS_WORKLOADS] + [f"DL {w}" for w, _ in DL_WORKLOADS]
            + [f"{b} on {DEVICE}" for b in (*KERAS_BACKENDS, "cupy", "jax")]
            + ["monitor during a run", "setup --device cuda:0", "peak maximum/sustained", "deviceQuery"])
