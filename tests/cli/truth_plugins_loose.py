"""A third party's `accelbench.backends` plugin: asynchronous backends whose synchronize() waits only
when more than K calls are in flight (a driver that treats a shallow queue as "nearly done").
tests/cli/test_loose_sync_plugins.py installs this file as a package and runs each through
`accelbench run --json`; benchmarks/sync_error_rates.py measures them beside the honest ones.

- `loose_sync_K` (K = 1, 2, 4, 8): synchronize() waits until at most K calls are pending, then
  returns: the last K calls of every block are never waited for, however long the block;
- `burst_sync_4`: synchronize() waits for everything, but only when more than 4 calls are pending
  (blocks of up to 4 calls are never waited for), as benchmarks/dishonest_cli.py's `loose-sync`;
- `honest_queue`: the same queue with a synchronize() that waits for all of it.

Reading an output back (to_host) waits for the whole queue in every one of them: the device runs
its queue in order.
"""
from __future__ import annotations

import collections
import concurrent.futures

import numpy as np

from accelbench.backends.numpy_backend import NumpyBackend

QUEUE_DEPTH = 16  # a launch blocks while this many are pending, as a GPU's queue does


def _copy(a, out):
    np.copyto(out, a)


def _triad(a, b, scalar, out):
    np.multiply(b, scalar, out=out)
    np.add(out, a, out=out)


def _matmul(a, b, out):
    np.matmul(a, b, out=out)


class _Queue(NumpyBackend):
    asynchronous = True
    depth = 0                 # calls synchronize() leaves pending
    all_or_nothing = False    # waits for all (beyond `depth`) or for none

    def __init__(self) -> None:
        super().__init__()
        self._worker = concurrent.futures.ThreadPoolExecutor(1)
        self._pending: collections.deque = collections.deque()

    def _launch(self, function, *args):
        while len(self._pending) >= QUEUE_DEPTH:
            self._pending.popleft().result()
        self._pending.append(self._worker.submit(function, *args))
        return args[-1]

    def _wait(self, leave: int = 0) -> None:
        while len(self._pending) > leave:
            self._pending.popleft().result()

    def synchronize(self, device: str) -> None:
        while self._pending and self._pending[0].done():
            self._pending.popleft()
        if len(self._pending) > self.depth:
            self._wait(0 if self.all_or_nothing else self.depth)

    def to_host(self, array):
        self._wait()
        return super().to_host(array)

    def wait_for(self, array) -> None:
        return None

    def copy(self, a, out):
        return self._launch(_copy, a, out)

    def triad(self, a, b, scalar, out):
        return self._launch(_triad, a, b, scalar, out)

    def matmul(self, a, b, out=None):
        target = out if out is not None else np.empty((a.shape[0], b.shape[1]), np.result_type(a, b))
        return self._launch(_matmul, a, b, target)


class HonestQueue(_Queue):
    name = "honest_queue"


class LooseSync1(_Queue):
    name, depth = "loose_sync_1", 1


class LooseSync2(_Queue):
    name, depth = "loose_sync_2", 2


class LooseSync4(_Queue):
    name, depth = "loose_sync_4", 4


class LooseSync8(_Queue):
    name, depth = "loose_sync_8", 8


class BurstSync4(_Queue):
    name, depth, all_or_nothing = "burst_sync_4", 4, True


CLASSES = {"HonestQueue": "honest_queue", "LooseSync1": "loose_sync_1", "LooseSync2": "loose_sync_2",
           "LooseSync4": "loose_sync_4", "LooseSync8": "loose_sync_8", "BurstSync4": "burst_sync_4"}
