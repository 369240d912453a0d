"""Data-parallel training with torch.distributed (seed 003, "distributed training on several GPUs").

accelbench launches k workers itself (`python -m accelbench.workloads.dl.ddp_worker`, each in its
own session so a hung one can be killed with its children); they rendezvous on a free localhost
port and train seed 000's MLP under DistributedDataParallel: gloo between CPU processes, NCCL
between GPUs (one GPU per worker). Each worker gets a fixed share of the CPU threads (cores // k),
so k processes never oversubscribe the cores.

Scaling is weak scaling: each worker keeps batch 128, so k workers process k×128 samples a step.
A run with k > 1 then trains rank 0 alone (same threads per worker) while the others wait, in the
same launch, so `scaling_efficiency` = throughput(k) / (k × throughput(1)) compares like with
like: what gradient all-reduce and contention cost. A step's sample is the slowest worker's time.

Timed by the workers themselves, not by the harness: each step runs in k processes at once, and
only they can put a synchronised clock read around it. They follow the harness's rule with the
run's rigor (its target, budget, minimum and maximum samples; ddp_worker._enough).

Verification: after training, every replica's parameters must be identical (the all-reduce really
happened) and the mean loss must have fallen.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from accelbench.errors import Unsupported
from accelbench.results import Check, Work
from accelbench.timing import stats
from accelbench.timing.rigor import DEFAULT_RIGOR, RIGORS, Rigor
from accelbench.verdict import TARGET, UNSTABLE, Caveat
from accelbench.vocabulary import usable_cpus
from accelbench.workloads.base import Prepared, SelfTimed, Workload
from accelbench.workloads.dl.ddp_worker import MIN_STEPS_ON_BUDGET, MLP_WIDTHS  # noqa: F401
from accelbench.workloads.verify import make_check

WORKER_MODULE = "accelbench.workloads.dl.ddp_worker"
BATCH_PER_WORKER = 128   # seed 000's batch
WARMUP_STEPS = 5
LAUNCH_TIMEOUT_S = 180.0  # the whole launch, torch import and training included
COLLECTIVE_TIMEOUT_S = 60
PORT_ATTEMPTS = 3
REPLICA_TOLERANCE = 1e-6  # all-reduced replicas are bit-identical; diverged ones differ by ~1e-2
LOSS_DROP = 0.9           # the last steps' mean loss must be under 90% of the first steps'
LOSS_WINDOW = 5
GPU_KINDS = ("cuda", "rocm")


class WorkerFailure(RuntimeError):
    """A worker exited with an error or ran past the timeout (and was killed)."""


def free_port() -> int:
    """A localhost TCP port nobody listens on now (the OS picks it; a race is retried on failure)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def mlp_parameters() -> int:
    return sum(a * b + b for a, b in zip(MLP_WIDTHS, MLP_WIDTHS[1:]))


def _worker_env(threads: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               CUDA_DEVICE_ORDER="PCI_BUS_ID", PYTHONUNBUFFERED="1")
    if sys.platform.startswith("linux") and Path("/sys/class/net/lo").exists():
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # loopback: the rendezvous address is 127.0.0.1
    return env


def _kill(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)  # the worker's whole session, children too
            except (ProcessLookupError, PermissionError):
                pass
        process.wait()


def _log_tail(out_dir: Path, workers: int, chars: int = 1500) -> str:
    tails = []
    for rank in range(workers):
        log = out_dir / f"rank{rank}.log"
        text = log.read_text(errors="replace").strip() if log.exists() else ""
        if text:
            tails.append(f"[rank {rank}] {text[-chars:]}")
    return "\n".join(tails) or "(no output)"


def _wait(processes: list[subprocess.Popen], deadline_s: float) -> str | None:
    """None when all exited 0; else why not (a failure stops waiting for the rest at once)."""
    while time.monotonic() < deadline_s:
        codes = [p.poll() for p in processes]
        failed = [(rank, code) for rank, code in enumerate(codes) if code not in (None, 0)]
        if failed:
            return "; ".join(f"rank {rank} exited with {code}" for rank, code in failed)
        if all(code == 0 for code in codes):
            return None
        time.sleep(0.05)
    return "timed out"


def launch(config: dict, timeout_s: float = LAUNCH_TIMEOUT_S) -> list[dict]:
    """Run config["workers"] workers to completion; their results by rank (parameters included)."""
    workers = config["workers"]
    out_dir = Path(tempfile.mkdtemp(prefix="accelbench-ddp-"))
    try:
        for _ in range(PORT_ATTEMPTS):
            problem = _launch_once(dict(config, port=free_port(), out_dir=str(out_dir)), out_dir, timeout_s)
            if problem is None:
                return [_read_rank(out_dir, rank) for rank in range(workers)]
            tail = _log_tail(out_dir, workers)
            if "address already in use" not in tail.lower():  # only a lost port race is worth a retry
                break
        raise WorkerFailure(f"ddp with {workers} worker(s): {problem}\n{tail}")
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def _launch_once(config: dict, out_dir: Path, timeout_s: float) -> str | None:
    config_path = out_dir / "config.json"
    config_path.write_text(json.dumps(config))
    env, processes = _worker_env(config["threads"]), []
    try:
        for rank in range(config["workers"]):
            with open(out_dir / f"rank{rank}.log", "wb") as log:
                processes.append(subprocess.Popen(
                    [sys.executable, "-m", WORKER_MODULE, str(config_path), str(rank)], env=env,
                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
        problem = _wait(processes, time.monotonic() + timeout_s)
        if problem == "timed out":
            problem = f"did not finish within {timeout_s:g} s: killed"
        return problem
    finally:
        _kill(processes)  # a no-op for workers that exited; kills the rest on failure or timeout


def _read_rank(out_dir: Path, rank: int) -> dict:
    result = json.loads((out_dir / f"rank{rank}.json").read_text())
    result["parameters"] = np.load(out_dir / f"rank{rank}.npy")
    return result


def slowest_steps(results: list[dict]) -> list[float]:
    """Per step, the slowest worker's time: the step is not over until every worker is done."""
    return [max(times) for times in zip(*(r["step_s"] for r in results))]


def throughput_samples_per_s(results: list[dict], batch: int) -> float:
    median_s = stats.median(slowest_steps(results))
    return len(results) * batch / median_s if median_s > 0 else float("nan")


def replica_spread(results: list[dict]) -> float:
    """Largest relative distance of any replica's parameters from rank 0's (0 when identical)."""
    reference = results[0]["parameters"].astype(np.float64)
    scale = float(np.linalg.norm(reference)) or 1.0
    return max((float(np.linalg.norm(r["parameters"].astype(np.float64) - reference)) / scale
                for r in results[1:]), default=0.0)


def loss_change(results: list[dict]) -> tuple[float, float]:
    """(mean loss of the first steps, of the last steps), over all workers."""
    losses = np.array([r["losses"] for r in results], dtype=np.float64)
    return float(losses[:, :LOSS_WINDOW].mean()), float(losses[:, -LOSS_WINDOW:].mean())


def check_training(results: list[dict], device_asked: str, device_seen: str) -> Check:
    """Replicas identical (within REPLICA_TOLERANCE) and the loss fell by at least 10%."""
    spread = replica_spread(results)
    first, last = loss_change(results)
    check = make_check(spread, REPLICA_TOLERANCE, device_seen, device_asked,
                       f"{len(results)} replica(s) identical after training; loss {first:.3f} -> {last:.3f}")
    problems = [] if check.passed else [check.detail.replace("relative error", "replica spread")]
    if not last < LOSS_DROP * first:
        problems.append(f"loss did not fall: {first:.3f} -> {last:.3f} (want < {LOSS_DROP:.0%} of the start)")
    if problems:
        return Check(False, spread, REPLICA_TOLERANCE, "; ".join(problems), device_seen)
    return check


class DDP(Workload):
    role = "model"  # a whole model or application, read on its own figures
    name = "ddp"
    description = ("data-parallel training of the R/Keras tutorial's MNIST MLP with torch.distributed: 1, 2, ... worker processes, "
                   "scaling efficiency")
    size_param, size_unit = "workers", "worker processes"
    dtypes = ("float32",)

    def grid(self, sizes, dtypes, quick):
        sizes = sizes or ([1, 2] if quick else [1, 2, 4, 8])
        return [{"workers": k, "batch": BATCH_PER_WORKER, "dtype": "float32"} for k in sizes]

    def work(self, params):
        # forward 2 and backward 4 FLOPs per weight and sample; each worker all-reduces its gradients
        weights = mlp_parameters()
        return Work(flops=6.0 * weights * params["batch"] * params["workers"],
                    bytes_moved=4.0 * weights * params["workers"])

    def footprint_bytes(self, params):
        return params["workers"] * 600 * 2**20  # a torch process each

    def prepare(self, backend, device, params, seed):
        config = _config(backend, device, params, seed)
        return _DDPRun(config, device).prepared()


def _config(backend, device: str, params: dict, seed: int) -> dict:
    if backend.name != "torch":
        raise Unsupported(f"ddp is written in PyTorch: run it with --backend torch, not {backend.name}")
    workers, kind = params["workers"], device.partition(":")[0]
    if params.get("dtype", "float32") != "float32":
        raise Unsupported("ddp trains in float32 only")
    if kind == "cpu":
        if workers > usable_cpus():
            raise Unsupported(f"{workers} CPU workers on {usable_cpus()} cores would oversubscribe them")
    elif kind in GPU_KINDS:
        count = sum(1 for d in backend.device_ids() if d.startswith(kind + ":"))
        if device != f"{kind}:0":
            raise Unsupported(f"ddp uses GPUs {kind}:0..{kind}:{workers - 1}: it is measured under {kind}:0")
        if workers > count:
            raise Unsupported(f"{workers} workers need {workers} GPUs, this machine has {count}")
    else:
        raise Unsupported(f"torch.distributed has no process group for {device} here (gloo: cpu, NCCL: cuda/rocm)")
    return {"workers": workers, "batch": params["batch"], "seed": seed, "warmup_steps": WARMUP_STEPS,
            "sync_gradients": bool(params.get("sync_gradients", True)),
            "process_group": "gloo" if kind == "cpu" else "nccl", "device_kind": "cpu" if kind == "cpu" else "cuda",
            "threads": max(1, usable_cpus() // workers), "collective_timeout_s": COLLECTIVE_TIMEOUT_S,
            "baseline": True}


class _DDPRun:
    def __init__(self, config: dict, device: str):
        self.config, self.device = config, device
        self.results: list[dict] = []
        self.baseline: list[dict] = []

    def prepared(self) -> Prepared:
        return Prepared(compute=self.compute, verify=self.verify, self_timed=self.self_timed,
                        metrics=self.metrics, release=self.release)

    def compute(self):
        """One whole launch (what self_timed measures step by step)."""
        return launch(self.config)

    def self_timed(self, rigor: Rigor = RIGORS[DEFAULT_RIGOR]) -> SelfTimed:
        self.config.update(target_rel_ci=rigor.target_rel_ci, budget_s=rigor.budget_s,
                           min_steps=rigor.min_samples, max_steps=rigor.max_samples)
        self.results = launch(self.config)
        if self.config["workers"] > 1:
            self.baseline = [self.results[0]["baseline"]]  # rank 0 alone, same threads per worker
        warnings: list[str] = []
        summary = stats.summarize(slowest_steps(self.results))
        target_met = summary.rel_ci_halfwidth <= rigor.target_rel_ci
        if not target_met:
            warnings.append(Caveat(f"95% CI ±{summary.rel_ci_halfwidth:.1%} of median with {summary.n} steps, "
                                   f"target ±{rigor.target_rel_ci:.0%}: budget of {rigor.budget_s:g} s spent", TARGET,
                                   {"rel_ci_halfwidth": summary.rel_ci_halfwidth, "target_rel_ci": rigor.target_rel_ci}))
        if summary.rel_iqr > 0.10:
            warnings.append(Caveat(f"unstable: IQR is {summary.rel_iqr:.0%} of median", UNSTABLE,
                                   {"rel_iqr": summary.rel_iqr}))
        return SelfTimed(phases_s={"compute": tuple(slowest_steps(self.results))},
                         first_call_s=max(r["first_step_s"] for r in self.results), warnings=tuple(warnings),
                         target_met=target_met)

    def verify(self) -> Check:
        if not self.results:
            self.self_timed()
        seen = self.results[0]["device_seen"].replace("cuda", self.device.partition(":")[0])
        return check_training(self.results, self.device, seen)

    def metrics(self) -> dict:
        workers, batch = self.config["workers"], self.config["batch"]
        throughput = throughput_samples_per_s(self.results, batch)
        single = throughput_samples_per_s(self.baseline, batch) if self.baseline else throughput
        first, last = loss_change(self.results)
        return {
            "workers": workers, "threads_per_worker": self.config["threads"],
            "process_group": self.config["process_group"], "batch_per_worker": batch,
            "throughput_samples_per_s": throughput, "one_worker_samples_per_s": single,
            "speedup_vs_one_worker": throughput / single,
            "scaling_efficiency": throughput / (workers * single),
            "step_p50_s": stats.median(slowest_steps(self.results)),
            "timed_wall_s": max(r["timed_wall_s"] for r in self.results),
            "startup_s": max(r["startup_s"] for r in self.results),
            "replica_spread": replica_spread(self.results), "loss_first": first, "loss_last": last,
            "gradient_bytes_per_step": 4 * mlp_parameters(),
        }

    def release(self) -> None:
        self.results, self.baseline = [], []
