"""One data-parallel training worker, started by accelbench.workloads.dl.ddp (never by a user).

    python -m accelbench.workloads.dl.ddp_worker CONFIG.json RANK

Joins the process group (gloo for CPU processes, NCCL for GPUs), trains seed 000's MLP
(784-256-128-10, dropout 0.4/0.3, RMSprop) under DistributedDataParallel on its own shard of a
synthetic task, and writes what it measured to OUT_DIR/rank{R}.json plus its final parameters to
OUT_DIR/rank{R}.npy, so the launcher can check that all-reduce kept the replicas identical.
"""
from __future__ import annotations

import contextlib
import json
import sys
import time
from datetime import timedelta
from pathlib import Path

STARTED_S = time.perf_counter()

import numpy as np  # noqa: E402 - the start time is taken before the imports it measures

MLP_WIDTHS = (784, 256, 128, 10)
MLP_DROPOUT = (0.4, 0.3)
DATA_BATCHES = 16        # distinct batches per worker, cycled: enough to learn from, cheap to make
MIN_STEPS_ON_BUDGET = 10  # the loss check compares the first 5 steps' mean loss with the last 5


def build_mlp(torch, seed: int):
    """Seed 000's Keras MLP in torch.nn, with weights drawn from `seed` (the same on every rank)."""
    from torch import nn

    torch.manual_seed(seed)
    (a, b, c, d), (p, q) = MLP_WIDTHS, MLP_DROPOUT
    return nn.Sequential(nn.Linear(a, b), nn.ReLU(), nn.Dropout(p), nn.Linear(b, c), nn.ReLU(), nn.Dropout(q),
                         nn.Linear(c, d))


def synthetic_shard(torch, seed: int, rank: int, batch: int, device):
    """Batches of a learnable task: labels from a fixed random linear teacher, inputs per rank."""
    teacher = torch.randn(MLP_WIDTHS[0], MLP_WIDTHS[-1], generator=torch.Generator().manual_seed(seed))
    generator = torch.Generator().manual_seed(seed * 1000 + rank + 1)  # each rank its own shard
    batches = []
    for _ in range(DATA_BATCHES):
        inputs = torch.randn(batch, MLP_WIDTHS[0], generator=generator)
        batches.append((inputs.to(device), (inputs @ teacher).argmax(dim=1).to(device)))
    return batches


def _device(torch, config: dict, rank: int):
    if config["device_kind"] == "cpu":
        return torch.device("cpu")
    torch.cuda.set_device(rank)  # one GPU per worker, numbered like the ranks
    return torch.device("cuda", rank)


class _Trainer:
    """One replica under DistributedDataParallel, its optimizer, data and recorded losses."""

    def __init__(self, torch, config: dict, rank: int, group=None):
        from torch.nn.parallel import DistributedDataParallel

        self.torch, self.device = torch, _device(torch, config, rank)
        self.model = build_mlp(torch, config["seed"]).to(self.device)
        self.ddp = DistributedDataParallel(self.model, device_ids=[rank] if self.device.type == "cuda" else None,
                                           process_group=group)
        self.optimizer = torch.optim.RMSprop(self.ddp.parameters(), lr=1e-3, alpha=0.9, eps=1e-7)  # Keras'
        self.batches = synthetic_shard(torch, config["seed"], rank, config["batch"], self.device)
        # a deliberately broken run keeps local gradients: DDP decides at forward time whether
        # the backward all-reduces, so the forward must be inside no_sync too
        self.context = contextlib.nullcontext if config["sync_gradients"] else self.ddp.no_sync
        self.losses: list = []

    def sync(self) -> None:
        if self.device.type == "cuda":
            self.torch.cuda.synchronize(self.device)

    def step(self, index: int) -> None:
        inputs, labels = self.batches[index % len(self.batches)]
        self.optimizer.zero_grad(set_to_none=True)
        with self.context():
            loss = self.torch.nn.functional.cross_entropy(self.ddp(inputs), labels)
            loss.backward()  # DDP all-reduces the gradients here, overlapped with the backward
        self.optimizer.step()
        self.losses.append(loss.detach())  # read back once at the end: no sync per step

    def timed_step(self, index: int) -> float:
        self.sync()
        start_s = time.perf_counter()
        self.step(index)
        self.sync()
        return time.perf_counter() - start_s

    def parameters(self):
        return self.torch.cat([p.detach().reshape(-1).float().cpu() for p in self.model.parameters()]).numpy()


def train(torch, config: dict, rank: int, group=None) -> dict:
    """Warm-up, then timed steps with a sync before every clock read; returns the measurements.

    `group`: the process group to all-reduce in (None: all workers). Steps go on as the run's
    rigor says (the harness's rule): until the 95% CI of the median slowest-worker step is within
    the target (after min_steps), the budget is spent (after 3 steps), or max_steps. Every worker
    gets every step's slowest time (a collective after the clock read, outside the timed step),
    so all make the same decision at the same step.
    """
    trainer, warmup = _Trainer(torch, config, rank, group), config["warmup_steps"]
    first_step_s = trainer.timed_step(0)
    for index in range(1, 1 + warmup):
        trainer.step(index)
    torch.distributed.barrier(group=group)  # every worker starts timing together
    wall_start_s = time.perf_counter()
    step_s: list[float] = []
    slowest_s: list[float] = []
    index = 1 + warmup
    while not _enough(slowest_s, config):
        step_s.append(trainer.timed_step(index))
        slowest = torch.tensor([step_s[-1]], dtype=torch.float64, device=trainer.device)
        torch.distributed.all_reduce(slowest, op=torch.distributed.ReduceOp.MAX, group=group)
        slowest_s.append(float(slowest))
        index += 1
    wall_s = time.perf_counter() - wall_start_s
    torch.distributed.barrier(group=group)
    device = trainer.device
    return {"first_step_s": first_step_s, "step_s": step_s, "timed_wall_s": wall_s,
            "losses": torch.stack(trainer.losses).float().cpu().tolist(), "parameters": trainer.parameters(),
            "device_seen": f"cuda:{device.index}" if device.type == "cuda" else "cpu",
            "threads": torch.get_num_threads()}


def _enough(slowest_s: list[float], config: dict) -> bool:
    from accelbench.timing import stats

    count = len(slowest_s)
    if count >= config["max_steps"]:
        return True
    if count >= config["min_steps"] and stats.rel_ci_halfwidth_presorted(sorted(slowest_s)) <= config["target_rel_ci"]:
        return True
    return count >= MIN_STEPS_ON_BUDGET and sum(slowest_s) >= config["budget_s"]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    config, rank = json.loads(Path(argv[0]).read_text()), int(argv[1])
    import torch
    import torch.distributed as dist

    torch.set_num_threads(config["threads"])
    dist.init_process_group(config["process_group"], init_method=f"tcp://127.0.0.1:{config['port']}",
                            rank=rank, world_size=config["workers"],
                            timeout=timedelta(seconds=config["collective_timeout_s"]))
    ready_s = time.perf_counter() - STARTED_S  # interpreter, torch import and rendezvous
    try:
        result = train(torch, config, rank)
        result["startup_s"] = ready_s
        if config["workers"] > 1 and config["baseline"]:
            result["baseline"] = _baseline(torch, dist, config, rank)
    finally:
        dist.destroy_process_group()
    out = Path(config["out_dir"])
    np.save(out / f"rank{rank}.npy", result.pop("parameters"))
    (out / f"rank{rank}.json").write_text(json.dumps(result))
    return 0


def _baseline(torch, dist, config: dict, rank: int) -> dict | None:
    """Rank 0 trains alone (a one-member group, same threads) while the others wait: the
    1-worker throughput the scaling efficiency needs, without launching again."""
    alone = dist.new_group([0])  # every rank must take part in creating it
    baseline = None
    if rank == 0:
        baseline = train(torch, config, rank, group=alone)
        baseline.pop("parameters")
    dist.barrier()  # the others block here (in a socket wait, not a spin) until rank 0 is done
    return baseline


if __name__ == "__main__":
    sys.exit(main())
