"""What the CPU side of the answer is, and what it reached: "a GPU 40× faster" means little without
"the CPU reached 85% of what it can". One sentence for the headline, from the baseline rows."""
from __future__ import annotations

from typing import Iterable, Mapping

from accelbench.report.analysis import Row
from accelbench.results import cores_used
from accelbench.runner import answer_scope
from accelbench.runner.cpu_baseline import baseline_key
from accelbench.units import format_si
from accelbench.vocabulary import Role

ROLES_SHOWN: tuple[Role, ...] = ("compute-bound", "memory-bound")  # the answer's two kinds of work, as workloads declare


def _share(row: Row) -> str:
    """'98% of its best measured rate, 120% of its formula peak' (what is known)."""
    parts = []
    if row.of_measured is not None:
        parts.append(f"{row.of_measured:.0%} of the best this CPU was measured at")
    if row.of_datasheet is not None:
        parts.append(f"{row.of_datasheet:.0%} of its {row.datasheet_provenance or 'datasheet'} peak")
    return ", ".join(parts)


def _how(row: Row) -> str:
    m = row.measurement
    threads = m.threads or 0
    named = m.extra.get("implementation") or f"{m.spec.backend}, {threads or '?'} thread{'' if threads == 1 else 's'}"
    used = cores_used(m)
    return f"{named}; CPU time / wall time {used:.2f}" if used is not None else str(named)


def cpu_sentence(rows: Iterable[Row], compared: Mapping[str, tuple] | None = None,
                 compared_one: Mapping[str, tuple] | None = None) -> str | None:
    """'The CPU side (all cores): matmul float32 n=1,000 on numpy, 2 threads: 202 GFLOP/s, 100% of …;
    stream triad float64 n=8,388,608 on numpy, 2 threads, blocked: 38.5 GB/s, …': the baselines of the
    very work the answer compares (`compared`: role -> the problem, cpu_baseline.baseline_key), else of
    what runner/answer_scope.py would state among the baselines (the same workload, dtype and size).
    Where all cores are no baseline (they ran slower than one thread), the one-thread baseline of the
    work compared against one core (`compared_one`) is."""
    rows = list(rows)
    for role, said, problems in (("cpu_all_cores", "all cores", compared), ("cpu_one_thread", "one core", compared_one)):
        parts = _parts([r for r in rows if r.baseline_role == role and r.rate and r.measurement.valid], problems)
        if parts:
            return f"The CPU side ({said}): " + "; ".join(parts) + "."
    return None


def _parts(baseline: list[Row], compared: Mapping[str, tuple] | None) -> list[str]:
    by_id = {id(r.measurement): r for r in baseline}
    by_problem = {baseline_key(r.measurement): r for r in baseline}
    stated = dict(answer_scope.stated([r.measurement for r in baseline]))
    parts = []
    for role in ROLES_SHOWN:  # of several of one role, the first in the registry's order (matmul, stream)
        if compared is not None:
            row = by_problem.get(compared[role]) if role in compared else None
        else:
            chosen = stated.get(role)
            row = by_id.get(id(chosen)) if chosen is not None else None
        if row is None:
            continue
        size = answer_scope.size_of(row.spec)
        what = " ".join(str(p) for p in (row.spec.workload, row.spec.param("kernel"), row.spec.param("dtype"),
                                         f"n={size:,.0f}" if size is not None else None) if p)
        # a noisy rate is no measured figure to set against a peak: said as noisy, with no share
        share = _share(row) if row.measurement.trusted else f"{row.measurement.verdict}: its share of a peak not stated"
        parts.append(f"{what} on {_how(row)}: {format_si(row.rate or 0.0, row.rate_unit)}"
                     + (f", {share}" if share else ""))
    return parts
