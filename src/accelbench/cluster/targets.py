"""The job matrix: which jobs one `accelbench submit` asks Slurm for.

Every job runs on one node. The matrix is the product of the lists given:
nodes (--nodelist, always one job per node) x partitions (--partition a,b) x GPU requests
(--gres, repeatable) x constraints (--constraint, repeatable) x --repeat. `--jobs-per` names the
dimensions that are split into separate jobs (default: all of partition, gres, constraint); a
dimension left out goes to Slurm whole, with Slurm's own meaning: partitions "a,b" = whichever
starts the job first, constraints joined with "|" = any of these features, gres joined with
"," = all of these resources in the same job.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass

from accelbench.errors import UsageError

SPLITTABLE = ("partition", "gres", "constraint")
MAX_JOBS_DEFAULT = 64  # a typo in a list should not flood a shared queue


@dataclass(frozen=True)
class Target:
    """Where one job should run; None means "let Slurm choose"."""

    partition: str | None = None
    node: str | None = None
    gres: str | None = None
    constraint: str | None = None
    repeat: int = 1  # 1..N under --repeat N

    def sbatch_options(self) -> list[str]:
        options = []
        for name, value in (("partition", self.partition), ("nodelist", self.node),
                            ("gres", self.gres), ("constraint", self.constraint)):
            if value:
                options.append(f"--{name}={value}")
        return options

    def label(self) -> str:
        """'node=gpu01 gres=gpu:1 #2' (empty parts left out; 'any node' when nothing is asked)."""
        parts = [f"{name}={value}" for name, value in (
            ("partition", self.partition), ("node", self.node), ("gres", self.gres),
            ("constraint", self.constraint)) if value]
        text = " ".join(parts) or "any node"
        return f"{text} #{self.repeat}" if self.repeat > 1 else text

    def to_dict(self) -> dict:
        return {"partition": self.partition, "node": self.node, "gres": self.gres,
                "constraint": self.constraint, "repeat": self.repeat}

    @classmethod
    def from_dict(cls, data: dict) -> "Target":
        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value in (None, "") else str(value)
        repeat = data.get("repeat", 1)
        return cls(partition=text("partition"), node=text("node"), gres=text("gres"),
                   constraint=text("constraint"), repeat=repeat if isinstance(repeat, int) and repeat > 0 else 1)


def parse_jobs_per(text: str | None) -> set[str]:
    """'partition,gres' -> {"partition", "gres"}; None -> every splittable dimension."""
    if text is None:
        return set(SPLITTABLE)
    chosen = {part.strip() for part in text.split(",") if part.strip()}
    unknown = sorted(chosen - set(SPLITTABLE))
    if unknown:
        raise UsageError(f"--jobs-per: unknown {', '.join(map(repr, unknown))}; accepted: "
                         f"{', '.join(SPLITTABLE)} (nodes are always one job each)")
    return chosen


def split_list(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def _dimension(values: list[str], split: bool, joiner: str) -> list[str | None]:
    if not values:
        return [None]
    return list(values) if split else [joiner.join(values)]


def expand_targets(*, nodes: list[str], partitions: list[str], gres: list[str],
                   constraints: list[str], repeat: int = 1, jobs_per: set[str] | None = None,
                   max_jobs: int = MAX_JOBS_DEFAULT) -> list[Target]:
    """Every target in a stable order (node, partition, gres, constraint, repeat)."""
    if repeat < 1:
        raise UsageError(f"--repeat: {repeat} is not a whole number >= 1")
    split = set(SPLITTABLE) if jobs_per is None else jobs_per
    dims = (_dimension(list(dict.fromkeys(nodes)), True, ","),
            _dimension(partitions, "partition" in split, ","),
            _dimension(gres, "gres" in split, ","),
            _dimension(constraints, "constraint" in split, "|"),
            range(1, repeat + 1))
    targets = [Target(partition=p, node=n, gres=g, constraint=c, repeat=r)
               for n, p, g, c, r in itertools.product(*dims)]
    if len(targets) > max_jobs:
        raise UsageError(f"this would submit {len(targets)} jobs, more than --max-jobs {max_jobs}; "
                         f"shorten the lists, use --jobs-per, or raise --max-jobs")
    return targets
