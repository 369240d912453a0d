#!/usr/bin/env bash
# One prepared check on a machine with an NVIDIA GPU, from a plain checkout (no pip install):
#
#   OUT=/path/to/evidence PYTHONPATH=src bash scripts/gpu_check.sh
#
# Needs python3 with numpy, psutil, threadpoolctl, rich (and for the GPU parts torch with CUDA;
# matplotlib for the report's figures; pytest for the tests; nvidia-ml-py for NVML). Writes under
# $OUT (default: ./gpu-check-out/<UTC time>): mode.json, info.json, run-*.json, hand.json,
# report/report.html, gpu-tests.xml/.txt, results.sqlite, a .log per step, steps.tsv and
# summary.txt (one line per check: PASS / FAIL / SKIP / INFO; docs/gpu-results.md explains them).
# Every step has a time limit inside an overall budget of GPU_CHECK_BUDGET_S (default 470 s), so
# the whole check ends within 8 minutes; about 6 minutes are expected on an H200.
# Without a GPU it runs a small CPU pipeline instead, every GPU line says "SKIP: no GPU", exit 0.
# Exit status: 1 when a summary line is FAIL, else 0.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
PY=${PYTHON:-python3}
OUT=${OUT:-$ROOT/gpu-check-out/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
BUDGET_S=${GPU_CHECK_BUDGET_S:-470}
START=$SECONDS
: > "$OUT/steps.tsv"

export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
export ACCELBENCH_DB="$OUT/results.sqlite"     # this check's results only, beside its other files
export XDG_CONFIG_HOME="$OUT/config"           # no `accelbench setup` choices of this user steer it
export XLA_PYTHON_CLIENT_PREALLOCATE=false     # jax (probed by info --all) must not hold the GPU's memory
export MPLBACKEND=Agg PYTHONUNBUFFERED=1

# step NAME CAP_S RESERVE_S STDOUT STDERR COMMAND...: at most CAP_S seconds, and never into the
# RESERVE_S seconds the steps after it need; records "NAME<TAB>exit status<TAB>seconds" in steps.tsv.
step() {
  local name=$1 cap=$2 reserve=$3 stdout=$4 stderr=$5
  shift 5
  local left=$((BUDGET_S - (SECONDS - START) - reserve))
  local limit=$((cap < left ? cap : left))
  if ((limit < 5)); then
    printf '%s\t124\t0\n' "$name" >>"$OUT/steps.tsv"
    echo "== $name: skipped, no time left in the ${BUDGET_S} s budget"
    return 124
  fi
  echo "== $name (at most ${limit} s)"
  local began=$SECONDS rc
  if command -v timeout >/dev/null; then
    timeout --kill-after=10 "$limit" "$@" >"$stdout" 2>"$stderr"
  else  # no coreutils timeout: the step runs unbounded rather than not at all
    "$@" >"$stdout" 2>"$stderr"
  fi
  rc=$?
  printf '%s\t%d\t%d\n' "$name" "$rc" $((SECONDS - began)) >>"$OUT/steps.tsv"
  ((rc == 0)) || echo "   exit status $rc (see $(basename "$stderr"))"
  return $rc
}

run_id() { "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["run_id"])' "$1" 2>/dev/null; }

step detect 60 0 "$OUT/detect.log" "$OUT/detect.err" "$PY" scripts/gpu_handloops.py --detect "$OUT/mode.json"
gpu=$("$PY" -c 'import json, sys; print(int(json.load(open(sys.argv[1]))["gpu"]))' "$OUT/mode.json" 2>/dev/null || echo 0)
cat "$OUT/detect.log" 2>/dev/null

step info 90 300 "$OUT/info.json" "$OUT/info.log" "$PY" -m accelbench info --all --json

if [[ $gpu == 1 ]]; then
  # bf16 first: it is the figure compared with the hand loop, so a cut-short run still has it
  step run-matmul 170 230 "$OUT/run-matmul.json" "$OUT/run-matmul.log" \
    "$PY" -m accelbench run matmul --sizes 2048,4096,8192 --dtype bfloat16,float16,float32 \
    --device cuda:0 --backend torch --rigor standard --json --no-progress
  # right after accelbench's matmul, so both see the GPU at the same temperature and clocks
  step hand-loops 60 200 "$OUT/hand.log" "$OUT/hand.err" "$PY" scripts/gpu_handloops.py --out "$OUT/hand.json"
  step run-suite 150 100 "$OUT/run-suite.json" "$OUT/run-suite.log" \
    "$PY" -m accelbench run stream memcpy montecarlo vgg-infer \
    --device cuda:0 --backend torch --rigor quick --json --no-progress
  # what NVML's sample buffers deliver on this board (the telemetry source reads around their gaps)
  step nvml-buffers 30 90 "$OUT/nvml-buffers.log" "$OUT/nvml-buffers.err" \
    "$PY" scripts/nvml_buffers.py "$OUT/nvml-buffers.json" --seconds 3
else
  step run-cpu 120 100 "$OUT/run-cpu.json" "$OUT/run-cpu.log" \
    "$PY" -m accelbench run matmul --sizes 256 --dtype float32 --device cpu --backend numpy \
    --rigor quick --json --no-progress
  step hand-loops 60 100 "$OUT/hand.log" "$OUT/hand.err" "$PY" scripts/gpu_handloops.py --out "$OUT/hand.json"
fi

runs=()
for document in "$OUT"/run-*.json; do
  id=$(run_id "$document") && [[ -n $id ]] && runs+=("$id")
done
if ((${#runs[@]})); then
  step report 60 70 "$OUT/report.log" "$OUT/report.err" "$PY" -m accelbench report "${runs[@]}" -o "$OUT/report"
else
  echo "== report: no run to report on"
  printf 'report\t1\t0\n' >>"$OUT/steps.tsv"
fi

step gpu-tests 200 5 "$OUT/gpu-tests.txt" "$OUT/gpu-tests.err" \
  "$PY" -m pytest -q -p no:cacheprovider -m gpu --run-gpu tests/gpu --junitxml="$OUT/gpu-tests.xml"

echo "== summary ($((SECONDS - START)) s so far)"
"$PY" scripts/gpu_summary.py "$OUT"
status=$?
echo "files: $OUT"
exit $status
