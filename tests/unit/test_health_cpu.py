"""accelbench check's CPU readers on recorded sysfs/procfs trees (tests/data/health)."""
from __future__ import annotations

from pathlib import Path

from accelbench.devices.sysfs import SysReader
from accelbench.health import cpu_config, cpu_hardware
from accelbench.health.model import FAIL, INCONCLUSIVE, PASS, SKIP, WARN, HealthFinding, exit_code

DATA = Path(__file__).parent.parent / "data" / "health"
FAULTY, V2 = SysReader(DATA / "faulty_node"), SysReader(DATA / "v2_node")


def test_v1_quota_in_a_slurm_job_cgroup_is_a_failure_naming_the_shortfall():
    f = cpu_config.quota_finding(FAULTY, 2, "SLURM_CPUS_ON_NODE=2")
    assert f.status == FAIL and f.measured == 0.5
    assert "shortfall 1.50 cores (75%)" in f.summary and "cpu.cfs_quota_us 50000" in f.detail
    assert "/slurm/uid_1000/job_42" in f.detail


def test_v2_quota_is_read_from_cpu_max_and_is_tightest_up_the_tree():
    quota = cpu_config.read_quota(V2)
    assert quota is not None and quota.cores == 1.5 and "cpu.max 150000 100000" in quota.where
    assert cpu_config.quota_finding(V2, 2, "x").status == FAIL
    assert cpu_config.quota_finding(V2, 1, "x").status == PASS


def test_no_quota_passes(tmp_path):
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/cgroup").write_text("1:cpu:/\n")
    assert cpu_config.quota_finding(SysReader(tmp_path), 2, "x").status == PASS


def test_affinity_narrower_than_slurm_allocation_fails_and_without_slurm_warns():
    slurm = cpu_config.affinity_finding({"SLURM_CPUS_ON_NODE": "2"}, {0}, 2)
    assert slurm.status == FAIL and "Slurm gave this job 2" in slurm.summary
    assert cpu_config.affinity_finding({"SLURM_JOB_CPUS_PER_NODE": "4(x2)"}, {0, 1, 2, 3}, 8).status == PASS
    assert cpu_config.affinity_finding({}, {0}, 2).status == WARN
    assert cpu_config.affinity_finding({}, {0, 1}, 2).status == PASS


def test_governor_turbo_thermal_edac_numa_on_the_faulty_node():
    assert cpu_config.governor_finding(FAULTY).status == WARN
    assert "userspace" in cpu_config.governor_finding(FAULTY).summary
    assert cpu_config.turbo_finding(FAULTY).status == WARN
    counts = cpu_hardware.throttle_counts(FAULTY)
    assert counts == {"core": 5, "package": 0}
    assert cpu_hardware.throttle_finding(counts, counts).status == WARN
    grew = cpu_hardware.throttle_finding({"core": 1, "package": 0}, counts)
    assert grew.status == WARN and "during this check" in grew.summary
    edac = cpu_hardware.edac_finding(FAULTY)
    assert edac.status == FAIL and edac.measured == {"corrected": 12, "uncorrected": 2}
    numa = cpu_hardware.numa_finding(FAULTY)
    assert numa.status == WARN and "node1" in numa.summary


def test_intel_pstate_powersave_is_normal_and_dimm_population_is_read():
    assert cpu_config.governor_finding(V2).status == PASS
    assert cpu_config.turbo_finding(V2).status == PASS
    dimms = cpu_hardware.read_dimms(V2)
    assert dimms == cpu_hardware.Dimms(8, 2, 3200)
    assert dimms.theory_bytes_s == 2 * 3200e6 * 8
    assert cpu_hardware.dimm_finding(dimms).status == WARN


def test_what_a_machine_lacks_is_a_skip_with_why(tmp_path):
    empty = SysReader(tmp_path)
    for f in (cpu_config.governor_finding(empty), cpu_config.turbo_finding(empty), cpu_hardware.edac_finding(empty),
              cpu_hardware.numa_finding(empty), cpu_hardware.dimm_finding(cpu_hardware.read_dimms(empty)),
              cpu_hardware.throttle_finding(None, cpu_hardware.throttle_counts(empty))):
        assert f.status == SKIP and f.summary


def test_exit_codes_a_fault_outranks_a_busy_machine():
    def one(status):
        return HealthFinding("x", "cpu", status, "s")
    assert exit_code([one(PASS), one(WARN), one(SKIP)]) == 0
    assert exit_code([one(PASS), one(INCONCLUSIVE)]) == 3
    assert exit_code([one(INCONCLUSIVE), one(FAIL)]) == 1


def _stream(seconds: float, kernel: str, n: int, threads: int):
    from synthetic_runs import measurement

    return measurement("stream", "numpy", "cpu", compute_s=seconds, threads=threads, kernel=kernel, n=n,
                       dtype="float64")


def test_history_is_this_machines_own_past_of_the_same_step_not_its_best_anything(tmp_path):
    """A triad judged against a copy's, a cache-resident array's or another thread count's best
    would fail a healthy machine: the check's history is the same kernel, threads, and a working
    set at least as large."""
    import socket

    from accelbench.health import cpu_perf
    from accelbench.store.db import Store

    db = tmp_path / "history.sqlite"
    step = next(s for s in cpu_perf.steps("standard") if s.check == "cpu.stream")
    big = step.params["n"] * 2
    triad_2t = _stream(1e-2, "triad", big, 2)
    with Store(db) as store:
        run_id = store.start_run({"hostname": socket.gethostname(), "os": "Linux"}, {})
        for m in (_stream(2e-3, "copy", big, 2), _stream(1e-4, "triad", 2**16, 2), _stream(2e-2, "triad", big, 1),
                  triad_2t):
            store.add_result(run_id, m)
    rate_2t = cpu_perf.rate(triad_2t, "memory_bandwidth")
    two = cpu_perf.expectation(step, None, 1.0, "", str(db), socket.gethostname(), threads=2)
    assert two is not None and two.source == "this machine's history" and two.value == rate_2t
    one = cpu_perf.expectation(step, None, 1.0, "", str(db), socket.gethostname(), threads=1)
    assert one is not None and one.value == rate_2t / 2  # the 1-thread triad took twice as long
    assert cpu_perf.expectation(step, None, 1.0, "", str(db), "another-host", threads=2) is None
    assert cpu_perf.expectation(step, None, 1.0, "", str(tmp_path / "absent.sqlite"), "x", threads=2) is None
    assert not (tmp_path / "absent.sqlite").exists()  # a check never creates a database


def test_the_measurements_use_no_more_cpus_than_slurm_gave_the_job():
    from accelbench.health.run import usable_cpus

    # a job of 1 CPU where Slurm binds no tasks still sees both cores: measure on 1, expect 1
    assert usable_cpus({"SLURM_CPUS_ON_NODE": "1"}, {0, 1}, 2) == (1, "1 of 2 CPUs given (SLURM_CPUS_ON_NODE=1)")
    assert usable_cpus({"SLURM_CPUS_ON_NODE": "4"}, {0, 1}, 8)[0] == 2  # a narrower affinity: cpu.affinity says so
    assert usable_cpus({}, {0, 1, 2}, 4) == (3, "3 of 4 CPUs usable")


def test_a_forced_openblas_coretype_older_than_the_cpu_is_named():
    avx512 = {"avx2", "fma", "avx512f", "avx512bw"}
    found = cpu_config.blas_kernel_finding({"OPENBLAS_CORETYPE": "Haswell"}, avx512)
    assert found.status == WARN and "OPENBLAS_CORETYPE=Haswell" in found.summary and "AVX-512" in found.summary
    # the CPU's own choice, a core type with AVX-512, or a CPU without it: nothing to say
    assert cpu_config.blas_kernel_finding({}, avx512).status == PASS
    assert cpu_config.blas_kernel_finding({"OPENBLAS_CORETYPE": "SkylakeX"}, avx512).status == PASS
    assert cpu_config.blas_kernel_finding({"OPENBLAS_CORETYPE": "Haswell"}, {"avx2", "fma"}).status == PASS


def test_the_coretype_finding_reads_the_flags_of_a_recorded_machine(tmp_path):
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512vl\n\n")
    found = {f.check: f for f in cpu_config.config_findings(SysReader(str(tmp_path)), {"OPENBLAS_CORETYPE": "Zen"},
                                                            {0}, 1)}
    assert found["cpu.blas_kernels"].status == WARN
