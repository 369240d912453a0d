"""Columns read back as written: samples through orjson where installed (fast), every other column
through the standard library (orjson turns integers beyond 64 bits into floats)."""
import json
import math

import pytest

from accelbench.results import Check, Measurement, Spec, Work
from accelbench.store import schema
from accelbench.store.db import Store

SAMPLES = [
    {"compute": [1e-3, 2.5e-07, 5e-324, 1.7976931348623157e308], "to_device": [3, 0.1]},
    {"compute": [1, 2, 3]},                         # whole-number samples, as an import may hold
    {"compute": [math.nan, math.inf]},              # dumps writes NaN / Infinity: orjson refuses them
    {},
]


@pytest.mark.parametrize("value", SAMPLES)
def test_samples_read_back_as_the_standard_library_reads_them(value):
    text = schema.dumps(value)
    assert repr(schema.loads_samples(text)) == repr(json.loads(text))


def test_orjson_reads_the_samples_where_it_is_installed():
    orjson = pytest.importorskip("orjson")
    assert schema._fast_loads() is orjson.loads


def test_every_other_column_keeps_integers_beyond_64_bits_and_non_finite_numbers(tmp_path):
    """A real store: extra and telemetry are free JSON; orjson would have read 2**70 as 1.18e21."""
    spec = Spec.make("matmul", "numpy", "cpu", n=64, dtype="float64")
    m = Measurement(spec=spec, phases_s={"compute": (1e-3, 2e-3, 3e-3)}, first_call_s=1e-3,
                    work=Work(flops=1.0, bytes_moved=1.0), check=Check(True, 0.0, 1e-9),
                    extra={"huge": 2**70, "neg": -(2**65)}, telemetry={"cpu": {"max": math.inf}})
    with Store(tmp_path / "r.sqlite") as store:
        run_id = store.start_run({"hostname": "h"}, {})
        store.add_result(run_id, m)
        (back,) = store.results(run_id)
    assert back.extra["huge"] == 2**70 and isinstance(back.extra["huge"], int) and back.extra["neg"] == -(2**65)
    assert back.telemetry["cpu"]["max"] == math.inf and back.phases_s == m.phases_s
