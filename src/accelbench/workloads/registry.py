"""The built-in workloads, loaded by name only when asked for."""
from __future__ import annotations

import importlib

from accelbench.errors import UsageError

WORKLOADS = {
    "matmul": "accelbench.workloads.matmul:Matmul",
    "stream": "accelbench.workloads.memory:Stream",
    "memcpy": "accelbench.workloads.memcpy:Memcpy",
    "reduce": "accelbench.workloads.memory:Reduce",
    "elementwise": "accelbench.workloads.memory:Elementwise",
}
# deep learning (issue #5)
WORKLOADS.update({
    "mlp": "accelbench.workloads.dl.mlp:MLP",
    "cnn": "accelbench.workloads.dl.cnn:CNN",
    "lstm": "accelbench.workloads.dl.lstm:LSTM",
    "amp": "accelbench.workloads.dl.amp:AMP",
    "transfer": "accelbench.workloads.dl.transfer_learning:TransferLearning",
    "vgg-infer": "accelbench.workloads.dl.vgg_infer:VGGInfer",
    "augment": "accelbench.workloads.dl.augment:Augment",
    "ddp": "accelbench.workloads.dl.ddp:DDP",
})
# statistics (issue #6)
WORKLOADS.update({
    "montecarlo": "accelbench.workloads.stats.montecarlo:MonteCarlo",
    "bootstrap": "accelbench.workloads.stats.bootstrap:Bootstrap",
    "integrate": "accelbench.workloads.stats.integrate:Integrate",
    "simstudy": "accelbench.workloads.stats.simstudy:SimStudy",
    "distance": "accelbench.workloads.stats.distance:Distance",
    "mcmc": "accelbench.workloads.stats.mcmc:MCMC",
})
QUICK_SUITE = ("matmul", "stream", "memcpy", "reduce", "elementwise")


# workloads given as objects (a user's function through accelbench.bench) live here for the process
_INSTANCES: dict = {}


def register_workload(workload) -> None:
    if workload.name in WORKLOADS and workload.name not in _INSTANCES:
        raise UsageError(f"workload name {workload.name!r} is taken by a built-in workload; choose another name")
    _INSTANCES[workload.name] = workload
    WORKLOADS.setdefault(workload.name, "")


def builtin_workload_class(name: str):
    """The class of a built-in workload (None for user functions and unknown names), imported now;
    None too where its module needs a package that is not installed."""
    target = WORKLOADS.get(name)
    if not target or name in _INSTANCES:
        return None
    module_name, class_name = target.split(":")
    try:
        return getattr(importlib.import_module(module_name), class_name)
    except ImportError:
        return None


def get_workload(name: str):
    if name in _INSTANCES:
        return _INSTANCES[name]
    if name not in WORKLOADS or not WORKLOADS[name]:
        raise UsageError(f"unknown workload {name!r}; accepted: {', '.join(WORKLOADS)}")
    module_name, class_name = WORKLOADS[name].split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("accelbench"):
            raise UsageError(f"workload {name!r} is not part of this installation ({exc.name} is missing)") from None
        raise UsageError(f"workload {name!r} needs {exc.name}, which is not installed") from None
    return getattr(module, class_name)()
