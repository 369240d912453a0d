import pytest

from accelbench.backends.numpy_backend import NumpyBackend
from accelbench.errors import UsageError
from accelbench.runner.plan import build_plan, parse_list, parse_sizes


def test_sizes_accept_plain_and_binary_suffixes():
    assert parse_sizes("1000,2000") == [1000, 2000]
    assert parse_sizes("1M,64MiB,1G") == [2**20, 64 * 2**20, 2**30]
    assert parse_sizes(None) is None


@pytest.mark.parametrize("text", ["0", "-5", "abc", "1.5", "10X"])
def test_bad_sizes_name_the_input(text):
    with pytest.raises(UsageError) as error:
        parse_sizes(text)
    assert text.lstrip("-") in str(error.value)


def test_cpu_is_planned_with_one_thread_and_all_threads():
    plan = build_plan(["matmul"], sizes=[64], dtypes=["float32"], backends={"numpy": NumpyBackend()},
                      cpu_threads=4)
    assert [item.threads for item in plan.items] == [1, 4]
    assert {item.spec.param("threads") for item in plan.items} == {1, 4}


def test_unknown_workload_device_dtype_are_usage_errors():
    backends = {"numpy": NumpyBackend()}
    with pytest.raises(UsageError, match="'fft'.*accepted: matmul"):
        build_plan(["fft"], backends=backends)
    with pytest.raises(UsageError, match="'cuda:7'.*accepted here: cpu"):
        build_plan(["matmul"], devices=["cuda:7"], backends=backends)
    with pytest.raises(UsageError, match="--dtype: unknown 'float8'"):
        build_plan(["matmul"], dtypes=["float8"], backends=backends)
    with pytest.raises(UsageError, match="--backend: unknown 'tensorflow'"):
        parse_list("tensorflow", ["numpy", "torch"], "--backend")


def test_absurd_size_is_refused_before_running():
    with pytest.raises(UsageError, match="needs .* GiB.*choose a smaller matrix order"):
        build_plan(["matmul"], sizes=[200_000], dtypes=["float64"], backends={"numpy": NumpyBackend()},
                   host_memory_bytes=16 * 2**30)


class _TwoOpenCLOnOneCPU:
    """A backend reaching two OpenCL implementations of the host CPU (apt's PoCL and pip's)."""

    def availability(self):
        from accelbench.backends.base import Availability
        return Availability(True, "")

    def device_ids(self):
        return ["opencl:0:0", "opencl:1:0"]


def _opencl_cpu(device_id: str):
    from accelbench.devices.model import Device
    return Device(device_id, "opencl", "AuthenticAMD", "pthread-AMD EPYC", "opencl", properties={"device_type": "CPU"})


def test_a_second_opencl_implementation_of_the_host_cpu_is_a_skip_unless_asked_for():
    from accelbench.devices.model import Device, repeated_host_cpus
    devices = [Device("cpu", "cpu", "AuthenticAMD", "AMD EPYC", "cpu"), _opencl_cpu("opencl:0:0"),
               _opencl_cpu("opencl:1:0")]
    repeated = repeated_host_cpus(devices)
    assert repeated == {"opencl:1:0": "opencl:0:0"}
    backends = {"numpy": NumpyBackend(), "pyopencl": _TwoOpenCLOnOneCPU()}
    plan = build_plan(["matmul"], sizes=[64], dtypes=["float32"], backends=backends, repeated=repeated)
    assert {i.spec.device for i in plan.items} == {"cpu", "opencl:0:0"}
    assert [s.spec.device for s in plan.skips] == ["opencl:1:0"]
    assert "measured as opencl:0:0" in plan.skips[0].reason and "--device opencl:1:0" in plan.skips[0].reason
    asked = build_plan(["matmul"], sizes=[64], dtypes=["float32"], backends=backends, repeated=repeated,
                       devices=["opencl:1:0"])
    assert [i.spec.device for i in asked.items] == ["opencl:1:0"] and not asked.skips
    gpu = Device("opencl:2:0", "opencl", "NVIDIA", "H100", "opencl", properties={"device_type": "GPU"})
    assert repeated_host_cpus([gpu, _opencl_cpu("opencl:0:0")]) == {}  # a GPU is never a repeat of the CPU
