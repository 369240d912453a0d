"""Truth by construction: checks the backend cannot see coming, tolerances from the dtype's own
arithmetic, synchronisation proven on the timed call, rate bounds at the right memory level."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from fakes import FakeBackend, FakeClock

from accelbench.backends import raw_access
from accelbench.devices.model import Device, PeakFigure
from accelbench.runner import memory_levels
from accelbench.runner.plausibility import bytes_bound, flops_bound
from accelbench.timing.sync_probe import NOT_WAITING, UNPROVEN, WAITS, _decided, prove
from accelbench.workloads.rotation import Rotation, Variant
from accelbench.workloads.verify import relative_norm_error, round_to_bfloat16, tolerance


def _product_errors(n: int) -> tuple[float, float, float]:
    rng = np.random.default_rng(n)
    a, b = (rng.uniform(-1, 1, (n, n)).astype(np.float16).astype(np.float64) for _ in range(2))
    exact = a @ b
    honest = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    through_bf16 = (round_to_bfloat16(a.astype(np.float32)) @ round_to_bfloat16(b.astype(np.float32)))
    return relative_norm_error(honest, exact), relative_norm_error(through_bf16.astype(np.float16), exact), \
        tolerance("float16", terms=n)


@pytest.mark.parametrize("n", [64, 512])
def test_float16_through_bfloat16_fails_and_honest_float16_passes(n):
    honest, cheat, limit = _product_errors(n)
    assert honest < limit / 3 < limit < cheat


def test_a_float64_sum_kept_in_float32_fails_at_large_n():
    x = np.random.default_rng(3).uniform(-1, 1, 1 << 22)
    exact = float(np.sum(x))
    conditioning = float(np.abs(x).sum()) / abs(exact)
    limit = tolerance("float64", terms=x.size) * conditioning
    assert abs(float(np.sum(x.astype(np.float32), dtype=np.float32)) - exact) / abs(exact) > limit
    assert abs(float(np.sum(x)) - exact) / abs(exact) <= limit


THIRD = 4096
SIZE = 3 * THIRD


def _rotation(make_output, fill_calls: list) -> Rotation:
    def make(index):
        # 3 × 4096 elements: a scattered poison (one in 512) puts 24 in it, so one third rewritten
        # leaves some of them (with 64 elements, one poisoned element fell in it a third of the time)
        host = np.random.default_rng(index).uniform(-1, 1, SIZE)
        return Variant([host.copy()], host * 2, out=np.empty(SIZE), hosts=[host])

    def judge(output, variant):
        from accelbench.workloads.verify import make_check
        return make_check(relative_norm_error(np.asarray(output), variant.reference), 1e-12, "cpu", "cpu")

    rotation = Rotation(make, judge, typed=True)

    class Spy(FakeBackend):
        def fill_nan(self, array):
            fill_calls.append(array)
            return super().fill_nan(array)

    prepared = rotation.prepared(Spy(device="cpu"), op=make_output)
    prepared.rotation = rotation
    return prepared


def test_poison_goes_around_the_backend_and_a_partial_rewrite_shows():
    filled: list = []
    calls = {"n": 0}

    def partial(v):  # rewrites a third of its output per call: after a poison, one call leaves NaN
        calls["n"] += 1
        third = slice(THIRD * (calls["n"] % 3), THIRD * (calls["n"] % 3 + 1))
        v.out[third] = v.inputs[0][third] * 2
        return v.out

    prepared = _rotation(partial, filled)
    for _ in range(12):
        prepared.compute()
    assert prepared.check_output(None).passed  # every half written by now: the old, last-output check passes
    prepared.poison()
    prepared.compute()
    assert not prepared.check_output(None).passed and filled == []  # the backend's fill_nan never ran


def test_an_output_of_another_dtype_and_an_output_that_is_its_host_input_fail():
    prepared = _rotation(lambda v: (v.inputs[0] * 2).astype(np.float32), [])
    prepared.compute()
    assert "float32 but its inputs are float64" in prepared.check_output(None).detail
    prepared = _rotation(lambda v: v.hosts[0], [])
    prepared.compute()
    assert "no data was moved" in prepared.check_output(None).detail


def test_raw_access_knows_numpy_and_not_a_plugin_type():
    array = np.zeros(4)
    assert raw_access.poison(array) and np.isnan(array).all()
    assert not raw_access.known(object()) and raw_access.dtype_name(object()) is None
    assert raw_access.first_element(np.ones((3, 3))).shape == (1,)


class _Lazy(FakeBackend):
    """A queue on a virtual device whose synchronize() waits for nothing after the first few."""

    def synchronize(self, device=None):
        self.syncs += 1


@pytest.mark.parametrize("backend_class, status", [(FakeBackend, WAITS), (_Lazy, NOT_WAITING)])
def test_synchronisation_is_proven_on_the_call_itself(backend_class, status):
    clock = FakeClock()
    backend = backend_class(clock, kernel_s=2e-3, asynchronous=True, device="cpu")
    a = np.ones((8, 8))
    proof = prove(lambda: backend.matmul(a, a), lambda: backend.synchronize(), backend.to_host, clock, 5)
    assert proof.status == status, proof.detail


def test_a_loaded_machine_gives_unproven_not_a_refusal():
    # three rounds of seven disturbed (read-backs slowed by load), four clean: not consistent
    ratios = sorted([1.0, 1.05, 0.98, 1.02, 3.0, 2.8, 2.5])
    assert _decided(ratios, 1e-3, 1e-3, 7).status == WAITS
    assert _decided(sorted([1.0, 1.1, 3.0, 2.8, 2.5, 3.1, 1.0]), 1e-3, 1e-3, 7).status == UNPROVEN
    assert _decided([3.0] * 7, 1e-3, 1e-3, 7).status == NOT_WAITING


CPU = Device("cpu", "cpu", "test", "test CPU", "test",
             properties={"physical_cores": 2, "running_clock_mhz": 3000, "l2_cache_bytes": 1 << 20,
                         "l2_cache_instances": 2, "l3_cache_bytes": 32 << 20, "l3_cache_instances": 1},
             peaks=(PeakFigure("fp64", 50e9, "formula", ""), PeakFigure("fp32", 100e9, "formula", ""),
                    PeakFigure("memory_bandwidth", 50e9, "table", "2 channels DDR5")))


def test_memory_rates_are_bounded_by_the_level_their_working_set_lives_in():
    small, middle, large = (bytes_bound(CPU, ws) for ws in (1 << 20, 16 << 20, 1 << 30))
    assert small is not None and middle is not None and large is not None
    assert small.value > middle.value > large.value
    assert "L1" in small.basis and "last-level" in middle.basis and "main memory" in large.basis
    assert large.value == pytest.approx(50e9 * memory_levels.MARGIN)


def test_compute_rates_are_bounded_by_their_own_precision():
    f64, f32 = flops_bound(CPU, "float64"), flops_bound(CPU, "float32")
    assert f64 is not None and f32 is not None and f64.peak < f32.peak and "fp64" in f64.basis
    half = flops_bound(CPU, "float16")
    assert half is not None and "no float16 peak" in half.basis


class _SleepyPool(FakeBackend):
    """An honest asynchronous runtime whose workers sleep when its queue runs dry: a call that finds
    the device idle pays a wake-up first (jax's or PoCL's pool on a VM: 0.3-0.7 ms measured here).
    Pipelined calls pay it once a block; calls serialised by a read-back, or by a synchronize()
    after each, pay it every call."""

    wake_s = 0.8e-3

    def kernel(self) -> None:
        if self.pending_s <= 0.0:
            self._device_free_at_s = max(self._device_free_at_s, self.clock.time_s) + self.wake_s
        super().kernel()


class _EarlySleepy(_SleepyPool):
    """The same runtime with a synchronize() that returns at once."""

    def synchronize(self, device=None):
        self.syncs += 1


@pytest.mark.parametrize("backend_class, status", [(_SleepyPool, WAITS), (_EarlySleepy, NOT_WAITING)])
def test_a_pool_that_sleeps_between_serial_calls_is_not_a_sync_that_returns_early(backend_class, status):
    # reading each output back costs the sleepy pool 1.4x: a refusal before the serial blocks (its
    # extra 0.8 ms a call was "sure"); the serial blocks pay it too, a sync that returns early does not
    clock = FakeClock()
    backend = backend_class(clock, kernel_s=2e-3, asynchronous=True, device="cpu")
    a = np.ones((8, 8))
    proof = prove(lambda: backend.matmul(a, a), lambda: backend.synchronize(), backend.to_host, clock, 5)
    assert proof.status == status, proof.detail
    assert proof.ratio > 1.25  # both read back slower than the pipelined block: the ratio alone cannot tell


def test_a_jax_cpu_output_is_read_through_its_own_host_view_not_a_new_computation():
    """Slicing a jax array dispatches computations that each wait to be woken by the last: an
    honest output then read back hundreds of µs after synchronize() ends it (a sync proof refusal)."""
    jnp = pytest.importorskip("jax.numpy")
    array = jnp.arange(12, dtype=jnp.float32).reshape(3, 4) * 2
    first = raw_access.first_element(array)
    assert isinstance(first, np.ndarray) and first.tolist() == [0.0]
    assert np.shares_memory(first, np.asarray(array))  # jax's own view: no copy, no computation


class _LoadedPool(_SleepyPool):
    """The sleepy pool on a loaded machine: every wake-up waits for a time slice (jax stream 2^16 at
    load 7: pipelined 32 µs a call, synchronised after every call 215 µs, read back 230 µs). Its
    work runs on this machine's CPUs: `cpu_s` counts the kernels' time, not the waits for a CPU."""

    wake_s = 6e-3

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.cpu_s = 0.0

    def kernel(self) -> None:
        self.cpu_s += self.kernel_s
        super().kernel()


class _EarlyLoaded(_LoadedPool):
    def synchronize(self, device=None):
        self.syncs += 1


def _loaded_window(disturbed: bool):
    from accelbench.timing.contention import Interference

    others = 1.5 if disturbed else 0.0
    return Interference(window_s=1.0, cores=2, others_cores=others, idle_cores=2 - others, steal_share=0.0,
                        run_wait_share=0.6 if disturbed else 0.0)


@pytest.mark.parametrize("backend_class, found_status", [(_LoadedPool, "noisy"), (_EarlyLoaded, "invalid")])
def test_a_refusal_by_lost_overlap_alone_is_noisy_not_invalid(backend_class, found_status):
    from accelbench.runner.audit import unproven_by_overlap

    clock = FakeClock()
    backend = backend_class(clock, kernel_s=1e-3, asynchronous=True, device="cpu")
    a = np.ones((8, 8))
    proof = prove(lambda: backend.matmul(a, a), lambda: backend.synchronize(), backend.to_host, clock, 5,
                  cpu_clock=lambda: backend.cpu_s)
    assert proof.status == NOT_WAITING and proof.ratio > 2.0, proof.detail  # beyond SURE_RATIO either way
    for window, named in ((_loaded_window(True), True), (_loaded_window(False), False), (None, False)):
        found = unproven_by_overlap(proof, window, 2.0)
        assert ("invalid" if found is None else found.status) == found_status
        if found is not None:
            assert "could not be proven" in found.reason and "lost overlap" in found.reason
            assert ("on a loaded machine" in found.reason) == named
    assert unproven_by_overlap(dataclasses.replace(proof, cpu_ratio=None), _loaded_window(True), 2.0) is None


@pytest.mark.parametrize("calls", [9, 21])
def test_a_backend_that_drops_overwritten_work_is_refused_by_the_cpu_time_it_saves(calls):
    """Its serial blocks are forced to do the work, as an honest pool's pay its wake-ups: the CPU
    time its pipelined blocks save tells the two apart (real numpy, real clocks): 2 of 9 calls done."""
    from accelbench.runner.audit import unproven_by_overlap
    from accelbench.timing.clock import PerfCounterClock
    from accelbench.timing.sync_probe import cpu_alike

    lazy = _truth_plugins().LazyGraph()
    a, b = np.ones(1 << 18, np.float32), np.ones(1 << 18, np.float32)
    outs, count = [np.empty(1 << 18, np.float32) for _ in range(2)], [0]

    def triad():
        count[0] += 1
        return lazy.triad(a, b, 2.0, outs[count[0] % 2])

    proof = prove(triad, lambda: lazy.synchronize("cpu"), lambda out: lazy.to_host(out[:1]), PerfCounterClock(),
                  calls)
    assert proof.status == NOT_WAITING, proof.detail
    assert proof.cpu_ratio is not None and proof.cpu_ratio > cpu_alike(calls, 2), proof.cpu_ratio
    assert unproven_by_overlap(proof, _loaded_window(True), cpu_alike(calls, 2)) is None


def _truth_plugins():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "cli" / "truth_plugins.py"
    spec = importlib.util.spec_from_file_location("truth_plugins_for_unit", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
