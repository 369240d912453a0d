"""A persistent pool of CPU threads for numpy work that releases the GIL (ufuncs, reductions, draws).

numpy runs each element-wise call on one thread; its ufuncs release the GIL, so several Python
threads working on separate blocks of the same arrays use several cores in one pass over memory.

`run(function, items, workers)` hands the items out one at a time to the calling thread and up to
`workers - 1` pool threads (so uneven items, or a core busy elsewhere, balance out), and returns the
results in item order. Idle pool threads block on a queue: nothing spins between calls, so a pool
left behind costs no CPU time to whatever runs next. Standard library only.
"""
from __future__ import annotations

import queue
import threading
from typing import Any, Callable, Iterable, Sequence

_local = threading.local()  # marks pool threads, so work they run never waits on the pool itself


class _Batch:
    """One run's items, shared by the threads working on them."""

    def __init__(self, function: Callable[[Any], Any], items: Sequence[Any]) -> None:
        self.function, self.items = function, items
        self.results: list[Any] = [None] * len(items)
        self.next_index = 0
        self.remaining = len(items)
        self.error: BaseException | None = None
        self.lock = threading.Lock()
        self.done = threading.Event()

    def _claim(self) -> int | None:
        with self.lock:
            if self.next_index >= len(self.items) or self.error is not None:
                return None
            self.next_index += 1
            return self.next_index - 1

    def work(self) -> None:
        """Take items until none are left (every participant runs this)."""
        while (index := self._claim()) is not None:
            try:
                self.results[index] = self.function(self.items[index])
            except BaseException as error:  # noqa: BLE001 - handed to the caller, which raises it
                with self.lock:
                    self.error = self.error or error
                    self.remaining -= len(self.items) - self.next_index  # unclaimed items are dropped
                    self.next_index = len(self.items)
            with self.lock:
                self.remaining -= 1
                if self.remaining <= 0:
                    self.done.set()


class CpuPool:
    """Threads started on first need and kept; `run` uses as many of them as it is asked to."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Batch] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._start_lock = threading.Lock()

    @property
    def started(self) -> int:
        return len(self._threads)

    def _ensure(self, count: int) -> None:
        with self._start_lock:
            while len(self._threads) < count:
                thread = threading.Thread(target=self._serve, name=f"accelbench-cpu-{len(self._threads)}",
                                          daemon=True)
                thread.start()
                self._threads.append(thread)

    def _serve(self) -> None:
        _local.in_pool = True
        while True:
            self._jobs.get().work()  # blocks in the kernel while idle: no spinning

    def run(self, function: Callable[[Any], Any], items: Iterable[Any], workers: int) -> list[Any]:
        """[function(item) for item in items], on up to `workers` threads (the caller is one of them)."""
        items = list(items)
        helpers = min(workers, len(items)) - 1
        if helpers <= 0 or getattr(_local, "in_pool", False):
            return [function(item) for item in items]
        self._ensure(helpers)
        batch = _Batch(function, items)
        for _ in range(helpers):
            self._jobs.put(batch)
        batch.work()
        batch.done.wait()
        if batch.error is not None:
            raise batch.error
        return batch.results


_shared = CpuPool()


def shared_pool() -> CpuPool:
    """The process's one pool: every backend instance shares its threads."""
    return _shared
