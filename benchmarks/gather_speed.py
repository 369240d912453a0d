"""How long `accelbench gather` takes for a sweep of many nodes (target: 500 nodes < 10 s).

Writes a results folder as `accelbench submit --each-node` and its jobs leave it: a manifest of N
jobs (one per node, with node features), and per job its export (one run of generated, realistic
results: synthetic_results.py) and its status file. Then times `accelbench gather` of the folder
into a fresh database in a new process, with no Slurm on PATH (as on a laptop after copying the
folder: the status files decide, so the time is the import's, not slurmctld's). --src points the
process at another checkout's src/, for a before/after pair.

    python benchmarks/gather_speed.py                       # 500 nodes, 60 results each
    python benchmarks/gather_speed.py --src /work/main/src  # the same folder, another checkout
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent / "src"), str(HERE)]  # this checkout writes the folder; --src only gathers it
from synthetic_results import timed  # noqa: E402

TARGET_S = 10.0


def write_sweep(folder: Path, nodes: int, results_per_node: int) -> None:
    """A results folder of `nodes` finished jobs, as the batch scripts leave it."""
    import synthetic_results

    from accelbench.cluster.manifest import JobRecord, add_jobs
    from accelbench.cluster.targets import Target

    (folder / "jobs").mkdir(parents=True)
    (folder / "logs").mkdir()
    records = []
    for index in range(nodes):
        job_id, node = str(1000 + index), f"node{index:04d}"
        doc = synthetic_results.export_document(1, results_per_node, seed=index)
        doc["runs"][0]["id"] = f"20250101-{index:06d}-sweep"
        doc["runs"][0]["machine"] = {**doc["runs"][0]["machine"], "hostname": node}
        (folder / "jobs" / f"{job_id}.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
        (folder / "jobs" / f"{job_id}.status.json").write_text(json.dumps(
            {"job_id": job_id, "node": node, "partition": "gpu", "cluster": "bench",
             "run_exit_code": 0, "export_exit_code": 0}))
        (folder / "logs" / f"{job_id}.out").write_text(f"accelbench job {job_id} on {node}\n")
        records.append(JobRecord(submission="sweep1", index=index + 1, target=Target(node=node, partition="gpu"),
                                 script="", submitted_at="2025-01-01T00:00:00+00:00", command=("matmul",),
                                 job_id=job_id, node_info={"features": "a100" if index % 2 else "h100",
                                                           "gres": "gpu:4"}))
    add_jobs(folder, records)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=500)
    parser.add_argument("--results-per-node", type=int, default=60)
    parser.add_argument("--src", type=Path, default=HERE.parent / "src", help="the src/ folder to time")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="accelbench-gather-speed-") as tmp:
        folder = Path(tmp) / "results"
        write_sweep(folder, args.nodes, args.results_per_node)
        size_mb = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6
        print(f"results folder: {args.nodes} jobs x {args.results_per_node} results, {size_mb:.0f} MB "
              f"(code timed: {args.src})")
        env = {**os.environ, "PYTHONPATH": str(args.src), "PATH": os.path.dirname(sys.executable),
               "ACCELBENCH_DB": str(Path(tmp) / "default.sqlite")}  # no squeue on PATH: the files decide
        command = [sys.executable, "-m", "accelbench", "gather", str(folder), "--db", str(Path(tmp) / "a.sqlite")]
        elapsed, cpu_s = timed(command, env)
        verdict = "meets" if elapsed < TARGET_S else "misses"
        print(f"accelbench gather of {args.nodes} node results: {elapsed:.1f} s wall, {cpu_s:.1f} s CPU "
              f"({verdict} the {TARGET_S:.0f} s target)")
        again, _ = timed(command, env)
        print(f"gathering the same folder again (nothing new): {again:.1f} s wall")
    return 0


if __name__ == "__main__":
    sys.exit(main())
