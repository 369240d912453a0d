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
