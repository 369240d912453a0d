"""The tutorial trap, as a user meets it: two Tesla K40m in the inventory (an NVML recording) and the
CPU-only torch installed here. `run` names them before its tables and in --json, the report near its
top, a refused `--device cuda:0` says why, and `list` shows torch's "cpu only" reason.
"""
from __future__ import annotations

import html
import json

import pytest

from accelbench.backends import registry
from accelbench.cli.main import main
from accelbench.devices import inventory as inventory_module
from accelbench.devices.inventory import Inventory, collect_inventory
from accelbench.report.data import RunData
from accelbench.report.unreached import unreached_lines

torch = pytest.importorskip("torch")
if torch.version.cuda is not None or getattr(torch.version, "hip", None):
    pytest.skip("the torch installed here is a GPU build", allow_module_level=True)

from recorded_gpus import SM_50_TO_90, fake_cuda_torch, nvml_devices  # noqa: E402

pytestmark = pytest.mark.slow  # seconds each: `pytest -m "not slow"` leaves them out

CPU_ONLY = (f"2 × Tesla K40m (cuda:0, cuda:1) found, not measured: torch {torch.__version__} is a CPU-only "
            "build: install a CUDA build of torch (https://pytorch.org/get-started/locally/)")
TOO_OLD = ("2 × Tesla K40m (cuda:0, cuda:1) found, not measured: compute capability 3.0 is below what the "
           "installed torch 2.5.1+cu121 supports (5.0; it is built for sm_50 … sm_90): install a torch built "
           "for sm_30, an older release (https://pytorch.org/get-started/previous-versions/)")
RUN = ["run", "matmul", "--sizes", "64", "--dtype", "float32", "--backend", "numpy,torch", "--device", "cpu",
       "--rigor", "quick", "--no-progress", "--no-telemetry"]


def _inject(monkeypatch, gpus) -> None:
    """The real CPU, plus recorded GPUs, as the inventory every command collects."""
    cpu = collect_inventory(probes=("cpu",))
    recorded = Inventory(host=cpu.host, probes=cpu.probes, devices=(*cpu.devices, *gpus))
    monkeypatch.setattr(inventory_module, "collect_inventory", lambda *args, **kwargs: recorded)


@pytest.fixture
def two_k40m(monkeypatch):
    _inject(monkeypatch, nvml_devices("k40m"))


@pytest.fixture
def two_k40m_at_cc30_with_a_cuda_torch(monkeypatch):
    """A CUDA build of torch whose kernels start at sm_50, and two GPUs of compute capability 3.0."""
    from accelbench.backends.torch_backend import TorchBackend

    class CudaTorchWithoutSm30(TorchBackend):
        def __init__(self):
            super().__init__(fake_cuda_torch(gpus=2, capability=(3, 0), arch_list=SM_50_TO_90))

        def device_ids(self):
            return []  # the fake computes nothing: only numpy measures the CPU

    _inject(monkeypatch, nvml_devices("k40m", capability=[3, 0]))
    registry.register_backend("torch", CudaTorchWithoutSm30)
    yield
    registry.clear_cache()


def _first_notice(out: str) -> tuple[str, str]:
    """The first notice under the heading: its first line, and its wrapped lines joined again (piped
    output wraps at 80 columns like the rest; its first line names the device, for grep)."""
    lines = out.splitlines()
    block = lines[1:lines.index("", 1)] if "" in lines[1:] else lines[1:2]
    return lines[1], " ".join(line.strip() for line in block)


def test_run_names_the_gpus_before_its_tables(two_k40m, tmp_path, capsys):
    assert main(RUN + ["--db", str(tmp_path / "r.sqlite")]) == 0
    out = capsys.readouterr().out
    first, notice = _first_notice(out)
    assert out.splitlines()[0] == "Devices found that this run cannot measure:"
    assert first.startswith("  ! 2 × Tesla K40m (cuda:0, cuda:1) found, not measured") and notice == f"! {CPU_ONLY}"
    after = " ".join(out.splitlines()[2:])
    assert "The answer" in after and "results saved in" in after  # the CPU was still measured, and said


def test_run_json_lists_them(two_k40m, tmp_path, capsys):
    assert main(RUN + ["--db", str(tmp_path / "r.sqlite"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    reason = CPU_ONLY.split("found, not measured: ")[1]
    assert document["unreached_devices"] == [{"name": "Tesla K40m", "device_ids": ["cuda:0", "cuda:1"], "count": 2,
                                              "reasons": [{"backend": "torch", "reason": reason}], "text": CPU_ONLY}]
    assert document["results"]  # the CPU was still measured


def test_report_shows_them_near_the_top(two_k40m, tmp_path, capsys):
    db, out = str(tmp_path / "r.sqlite"), tmp_path / "report"
    assert main(RUN + ["--db", db]) == 0
    assert main(["report", "--db", db, "-o", str(out)]) == 0
    page = (out / "report.html").read_text()
    assert "Devices found, not measured" in page
    assert page.index(html.escape(CPU_ONLY)) < page.index("<h3>Findings</h3>")


def test_a_cuda_build_without_kernels_for_the_gpus(two_k40m_at_cc30_with_a_cuda_torch, tmp_path, capsys):
    db = str(tmp_path / "r.sqlite")
    assert main(RUN + ["--db", db]) == 0
    assert _first_notice(capsys.readouterr().out)[1] == f"! {TOO_OLD}"
    assert main(RUN + ["--db", db, "--json"]) == 0
    assert [g["text"] for g in json.loads(capsys.readouterr().out)["unreached_devices"]] == [TOO_OLD]
    assert main(["report", "--db", db, "-o", str(tmp_path / "report")]) == 0
    assert html.escape(TOO_OLD) in (tmp_path / "report" / "report.html").read_text()


def test_asking_for_a_gpu_that_torch_cannot_reach_says_why(two_k40m, tmp_path, capsys):
    assert main(["run", "matmul", "--device", "cuda:0", "--backend", "numpy,torch",
                 "--db", str(tmp_path / "r.sqlite")]) == 2
    err = capsys.readouterr().err
    assert "'cuda:0'" in err and CPU_ONLY in err and len(err.strip().splitlines()) == 1


def test_list_shows_an_available_backends_reason(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "500")  # no folding: each reason stays on one line of the table
    assert main(["list"]) == 0
    torch_row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("torch "))
    assert f"available (cpu only: torch {torch.__version__} is built without CUDA or ROCm)" in torch_row


def test_list_shows_the_compute_capability_reason(two_k40m_at_cc30_with_a_cuda_torch, monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "500")
    assert main(["list"]) == 0
    torch_row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("torch "))
    assert "available (cpu only: cuda:0: compute capability 3.0 is below what the installed torch" in torch_row


def test_a_run_stored_before_reasons_were_recorded_still_names_unmeasured_devices():
    gpus = {d.id: d for d in nvml_devices("k40m")}
    run = RunData("r1", info=None, machine={"inventory": {}}, measurements=[], skips=[], devices=gpus)
    assert unreached_lines(run) == [
        f"Tesla K40m ({i}) found, not measured in this run (the run predates recorded reasons; "
        "`accelbench list` shows what each backend reaches now)" for i in ("cuda:0", "cuda:1")]
    recorded = dict(run.machine, unreached_devices=[{"name": "Tesla K40m", "device_ids": ["cuda:0", "cuda:1"],
                                                      "reasons": [{"backend": "torch", "reason": "why: fix"}]}])
    run.machine = recorded
    assert unreached_lines(run) == ["2 × Tesla K40m (cuda:0, cuda:1) found, not measured: why: fix"]
