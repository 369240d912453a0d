"""The nodes of a cluster as Slurm sees them: which to sweep, and which cannot be measured and why.

`accelbench submit --each-node` asks `scontrol show node -o` once (one line per node, every node
of the cluster: one call whatever its size), keeps the nodes of the chosen partitions, node list
or feature expression, and splits them into nodes to measure and nodes Slurm will not run a job
on (down, drained, failing, not responding, powered off), each of those with Slurm's reason.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from accelbench.cluster.slurm import Runner, SlurmUnavailable, run_command
from accelbench.cluster.states import parse_scontrol_fields
from accelbench.cluster.targets import Target
from accelbench.errors import UsageError

# scontrol's node State is BASE[+FLAG...] with a trailing * when the node does not respond; a job
# pinned to a node in any of these would wait forever (or fail), so the node is reported instead
UNUSABLE_BASE = frozenset({"DOWN", "FUTURE", "UNKNOWN"})
UNUSABLE_FLAGS = frozenset({"DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "NOT_RESPONDING",
                            "POWERED_DOWN", "POWER_DOWN", "POWERING_DOWN", "REBOOT_ISSUED",
                            "REBOOT_REQUESTED", "INVALID_REG"})
_FEATURE = re.compile(r"[A-Za-z0-9_.\-]+")


def _null(value: str) -> str:
    return "" if value in ("(null)", "None", "N/A") else value


@dataclass(frozen=True)
class Node:
    """One node: its name, Slurm's state words, features (its node type), GRES and partitions."""

    name: str
    state: str                          # as scontrol shows it, e.g. IDLE+DRAIN, DOWN*
    features: tuple[str, ...] = ()      # active features (else available), sorted
    gres: str = ""                      # e.g. gpu:a100:4
    partitions: tuple[str, ...] = ()
    reason: str = ""                    # Slurm's Reason, with who set it and when

    @property
    def state_words(self) -> set[str]:
        words = set(self.state.rstrip("*").upper().replace("+", " ").split())
        return words | ({"NOT_RESPONDING"} if self.state.endswith("*") else set())

    @property
    def measurable(self) -> bool:
        words = self.state_words
        return not (words & UNUSABLE_FLAGS) and not (words & UNUSABLE_BASE) and bool(words)

    @property
    def node_type(self) -> str:
        """Nodes with the same features are siblings: the fleet view compares them with each other."""
        return ",".join(self.features) or "(no features)"

    def why_not_measured(self) -> str:
        """'DRAIN (IDLE+DRAIN): fan failure [root@2026-12-03T07:57:27]'."""
        words = sorted((self.state_words & UNUSABLE_FLAGS) | (self.state_words & UNUSABLE_BASE))
        because = f": {self.reason}" if self.reason else ": Slurm gives no reason"
        return f"{'+'.join(words) or 'unusable'} (state {self.state}){because}"

    def info(self) -> dict[str, str]:
        """What the manifest keeps, and gather adds to the node's results as tags."""
        return {"features": ",".join(self.features), "gres": self.gres, "state": self.state,
                "partitions": ",".join(self.partitions)}


def parse_nodes(text: str) -> list[Node]:
    """Lines of `scontrol show node -o` -> nodes, in Slurm's order."""
    nodes = []
    for line in (text or "").splitlines():
        fields = parse_scontrol_fields(line)
        name = fields.get("NodeName", "")
        if not name:
            continue
        features = _null(fields.get("ActiveFeatures", "")) or _null(fields.get("AvailableFeatures", ""))
        nodes.append(Node(
            name=name, state=fields.get("State", "UNKNOWN"),
            features=tuple(sorted({f for f in features.split(",") if f})),
            gres=_null(fields.get("Gres", "")),
            partitions=tuple(p for p in _null(fields.get("Partitions", "")).split(",") if p),
            reason=_null(fields.get("Reason", "")).strip()))
    return nodes


def feature_matcher(expression: str):
    """'a100' / 'a100&ib' / 'a100|h100' -> a test of a node's features (Slurm's & and |, no
    brackets or counts: those choose sets of nodes for one job, not one node)."""
    text = expression.strip()
    if "&" in text and "|" in text or not all(_FEATURE.fullmatch(p.strip()) for p in re.split(r"[&|]", text)):
        raise UsageError(f"--constraint {expression!r} with --each-node: accepted: one feature, "
                         f"features joined by & (all of them) or by | (any of them)")
    if "|" in text:
        wanted = {p.strip() for p in text.split("|")}
        return lambda node: bool(wanted & set(node.features))
    needed = {p.strip() for p in text.split("&")}
    return lambda node: needed <= set(node.features)


def choose_nodes(nodes: Iterable[Node], *, partitions: list[str], names: list[str],
                 constraints: list[str]) -> list[Node]:
    """The nodes in any of `partitions`, named in `names`, with features matching any of
    `constraints` (each given list narrows; an empty one does not). Slurm's order, once each."""
    nodes = list(nodes)
    matchers = [feature_matcher(c) for c in constraints]
    chosen = []
    for node in nodes:
        if partitions and not set(partitions) & set(node.partitions):
            continue
        if names and node.name not in names:
            continue
        if matchers and not any(match(node) for match in matchers):
            continue
        chosen.append(node)
    unknown = [n for n in names if n not in {node.name for node in nodes}]
    if unknown:
        raise UsageError(f"--nodelist: Slurm knows no node {', '.join(unknown[:10])}")
    return chosen


def cluster_nodes(runner: Runner = run_command) -> list[Node]:
    """Every node Slurm knows, with its state, features, GRES and reason (one scontrol call)."""
    result = runner(["scontrol", "show", "node", "-o"])
    if result.returncode != 0:
        message = (result.stderr or result.stdout or "").strip() or f"exit status {result.returncode}"
        raise SlurmUnavailable(f"scontrol show node failed: {message}")
    return parse_nodes(result.stdout)


@dataclass(frozen=True)
class Sweep:
    """`submit --each-node`: a job per usable node (pinned to it), and the nodes left out, with why."""

    targets: list[Target]
    node_of: dict[str, Node]            # node name -> node, for every chosen node
    unmeasured: list[Node]


def plan_sweep(nodes: list[Node], *, partitions: list[str], gres: list[str], repeat: int,
               max_jobs: int) -> Sweep:
    """One target per usable node (x --gres values x --repeat), in the node's first chosen
    partition (or its default one); down and drained nodes go to `unmeasured`."""
    if repeat < 1:
        raise UsageError(f"--repeat: {repeat} is not a whole number >= 1")
    usable = [n for n in nodes if n.measurable]
    targets: list[Target] = []
    gres_values: list[str | None] = list(gres) or [None]
    for node in usable:
        partition = next((p for p in partitions if p in node.partitions), None)
        for one_gres in gres_values:
            targets += [Target(partition=partition, node=node.name, gres=one_gres, repeat=r)
                        for r in range(1, repeat + 1)]
    if len(targets) > max_jobs:
        raise UsageError(f"--each-node: this would submit {len(targets)} jobs ({len(usable)} usable "
                         f"nodes), more than --max-jobs {max_jobs}; choose fewer nodes or raise --max-jobs")
    return Sweep(targets, {n.name: n for n in nodes}, [n for n in nodes if not n.measurable])
