"""A background thread that polls every telemetry source, and windows that collect around work.

    sampler = TelemetrySampler(["cpu", "cuda:0"], interval_s=0.1).start()
    with sampler.window() as w:
        timing = measure(...)          # the timed work
    w.summary()                        # utilisation, memory peak, clock min, energy over exactly this
    sampler.stop()

A window polls every source itself when it opens and when it closes, and reads the energy counters
at those two instants, so its energy is exactly the window's and even a window shorter than the
interval has samples. Between the two, the thread's polls add samples (and counter reads, so a
RAPL counter that wraps more than once is still counted right). Polls are serialised by a lock.
"""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

from accelbench.telemetry.model import ERROR, CounterReading, DeviceInfo, NoData, Sample, Source, SourceUnavailable
from accelbench.telemetry.summary import merge_infos, summarize

DEFAULT_INTERVAL_S = 0.1
MAX_FAILURES = 3  # consecutive poll failures before a source is given up, with the error as reason


class Window:
    """Samples and counter readings of every device between __enter__ and __exit__."""

    def __init__(self, sampler: "TelemetrySampler"):
        self.sampler = sampler
        self.samples: list[Sample] = []
        self.counters: list[CounterReading] = []
        self.t0_s: float | None = None
        self.t1_s: float | None = None       # when the energy counters were last read
        self.samples_end_s: float | None = None  # after the closing poll, whose samples count

    def __enter__(self) -> "Window":
        self.sampler._open_window(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.sampler._close_window(self)

    @property
    def window_s(self) -> float | None:
        return None if self.t0_s is None or self.t1_s is None else self.t1_s - self.t0_s

    def summary(self, calls: int | None = None) -> dict[str, Any]:
        """JSON-ready statistics of the window (so far, if it is still open); see telemetry.summary."""
        if self.t0_s is None:
            raise RuntimeError("summary() of a window that was never entered")
        with self.sampler._lock:
            samples, counters = list(self.samples), list(self.counters)
        end_s = self.t1_s if self.t1_s is not None else self.sampler.clock()
        return summarize(self.t0_s, end_s, samples, counters, self.sampler.device_infos(), self.sampler.no_data,
                         self.sampler.interval_s, calls, samples_end_s=self.samples_end_s)


    def summary_for(self, device_ids: str | Sequence[str], calls: int | None = None) -> dict[str, Any]:
        """The summary cut down to some devices (what one benchmark result stores): their sections,
        and the gaps that concern them (their own, and those of every vendor when none was asked)."""
        wanted = [device_ids] if isinstance(device_ids, str) else list(device_ids)
        full = self.summary(calls)
        devices = {d: full["devices"][d] for d in wanted if d in full["devices"]}
        gaps = [g for g in full["no_data"] if set(g["devices"]) & set(wanted)
                or (not g["devices"] and not devices)]
        return {**{k: v for k, v in full.items() if k not in ("devices", "no_data")}, "devices": devices,
                "no_data": gaps}


class TelemetrySampler:
    """Polls telemetry sources every interval_s in a daemon thread (or on demand with poll()).

    device_ids: the ids to watch ("cpu", "cuda:0", "opencl:0:0", ...); None watches everything found.
    sources/no_data: injected instead of the defaults (tests replay recorded libraries this way).
    clock: seconds; wall time by default, the timeline NVML stamps its buffered samples on.
    """

    def __init__(self, device_ids: Sequence[str] | None = None, interval_s: float = DEFAULT_INTERVAL_S, *,
                 sources: Sequence[Source] | None = None, no_data: Sequence[NoData] = (),
                 clock: Callable[[], float] = time.time):
        if interval_s <= 0:
            raise ValueError(f"interval_s must be > 0, got {interval_s}")
        self.device_ids = list(device_ids) if device_ids is not None else None
        self.interval_s = float(interval_s)
        self.clock = clock
        self._given_sources = list(sources) if sources is not None else None
        self._given_no_data = list(no_data)
        self.sources: list[Source] = []
        self.no_data: list[NoData] = []
        self._lock = threading.RLock()
        self._windows: list[Window] = []
        self._failures: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._opened = False
        self._infos_at_stop: dict[str, DeviceInfo] | None = None
        self.latest: dict[str, dict[str, Any]] = {}  # device -> metric -> newest value

    def open(self) -> "TelemetrySampler":
        """Open every source; those that cannot give data go to `no_data` with their reason."""
        if self._opened:
            return self
        if self._given_sources is not None:
            candidates, self.no_data = self._given_sources, list(self._given_no_data)
        else:
            from accelbench.telemetry.sources import default_sources
            candidates, self.no_data = default_sources(self.device_ids)
        now_s = self.clock()
        for source in candidates:
            try:
                source.open(now_s)
            except SourceUnavailable as exc:
                self.no_data.append(NoData(source.name, source.vendor, exc.status, exc.reason,
                                           self._asked_for(source)))
                continue
            except Exception as exc:  # noqa: BLE001 - a broken library must not stop the measurement
                self.no_data.append(NoData(source.name, source.vendor, ERROR, f"{type(exc).__name__}: {exc}",
                                           self._asked_for(source)))
                continue
            self.sources.append(source)
            for device_id, reason in source.absent.items():
                self.no_data.append(NoData(source.name, source.vendor, "not_present", reason, (device_id,)))
        self._opened = True
        return self

    def _asked_for(self, source: Source) -> tuple[str, ...]:
        wanted = getattr(source, "wanted", None) or []
        return tuple(wanted) if wanted else (("cpu",) if source.vendor.startswith("CPU") and self.device_ids else ())

    def device_infos(self) -> dict[str, DeviceInfo]:
        if not self._opened and self._infos_at_stop is not None:
            return self._infos_at_stop  # summaries stay readable after stop()
        infos = merge_infos(info for source in self.sources for info in source.devices.values())
        cpu = infos.get("cpu")
        if cpu is not None and not any(s.name == "rapl" for s in self.sources):
            rapl = next((n for n in self.no_data if n.source == "rapl"), None)
            if rapl is not None:
                cpu.energy_note = cpu.energy_note or f"no CPU energy: RAPL {rapl.status}: {rapl.reason}"
        return infos

    def start(self) -> "TelemetrySampler":
        """Open the sources and start the polling thread."""
        self.open()
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="accelbench-telemetry", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        next_s = time.perf_counter()
        while True:
            next_s += self.interval_s
            if self._stop.wait(max(0.0, next_s - time.perf_counter())):
                return
            self.poll()
            next_s = max(next_s, time.perf_counter() - self.interval_s)  # a slow poll skips, never bursts

    def stop(self) -> None:
        """Stop the thread and close the sources."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self._thread = None
        with self._lock:
            if self._opened:
                self._infos_at_stop = self.device_infos()
            for source in self.sources:
                source.close()
            self.sources = []
            self._opened = False

    def __enter__(self) -> "TelemetrySampler":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def poll(self) -> list[Sample]:
        """Poll every source once now; the samples go to every open window and to `latest`."""
        with self._lock:
            now_s = self.clock()
            samples: list[Sample] = []
            counters: list[CounterReading] = []
            for source in list(self.sources):
                samples += self._guarded(source, lambda: source.poll(now_s))
                if self._windows:
                    counters += self._guarded(source, lambda: source.counters(now_s))
            for window in self._windows:
                window.samples += samples
                window.counters += counters
            for sample in samples:
                self.latest.setdefault(sample.device_id, {}).update(sample.values)
            return samples

    def _guarded(self, source: Source, call: Callable[[], list]) -> list:
        try:
            result = call()
        except Exception as exc:  # noqa: BLE001 - one failing source must not stop the others
            failures = self._failures[source.name] = self._failures.get(source.name, 0) + 1
            if failures >= MAX_FAILURES:
                self.sources.remove(source)
                self.no_data.append(NoData(source.name, source.vendor, ERROR,
                                           f"stopped after {failures} failed polls: {type(exc).__name__}: {exc}",
                                           tuple(source.devices)))
            return []
        self._failures[source.name] = 0
        return result

    def read_counters(self) -> list[CounterReading]:
        with self._lock:
            now_s = self.clock()
            return [r for source in list(self.sources) for r in self._guarded(source, lambda: source.counters(now_s))]

    def window(self) -> Window:
        """A context manager collecting telemetry over its body; `summary()` once it has closed."""
        return Window(self)

    def _open_window(self, window: Window) -> None:
        self.open()
        with self._lock:
            self.poll()  # starts every rate (CPU time, energy) at the window's edge
            window.counters = self.read_counters()
            window.t0_s = window.counters[0].t_s if window.counters else self.clock()
            self._windows.append(window)

    def _close_window(self, window: Window) -> None:
        with self._lock:
            end = self.read_counters()  # first: energy ends as close to the work's end as possible
            window.t1_s = end[0].t_s if end else self.clock()
            window.counters += end
            self._windows.remove(window)
            window.samples += self.poll()  # the rates up to the end, and what the buffers still hold
            window.samples_end_s = self.clock()


@contextmanager
def monitor(interval: float = DEFAULT_INTERVAL_S, devices: Sequence[str] | None = None) -> Iterator[Window]:
    """Telemetry around your own code: `with monitor(interval=0.1) as m: work(); m.summary()`."""
    sampler = TelemetrySampler(devices, interval).start()
    try:
        with sampler.window() as window:
            yield window
    finally:
        sampler.stop()
