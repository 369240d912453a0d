#!/usr/bin/env bash
# One prepared check on a machine with an NVIDIA GPU, from a plain checkout (no pip install):
#
#   OUT=/path/to/evidence PYTHONPATH=src bash scripts/gpu_check.sh
#
# Needs python3 with numpy, psutil, threadpoolctl, rich (and for the GPU parts torch with CUDA;
# matplotlib for the report's figures; pytest for the tests; nvidia-ml-py for NVML; cupy, jax and
# keras where their steps should measure). Writes under $OUT (default: ./gpu-check-out/<UTC time>),
# each file as its step ends: mode.json, info.json, run-*.json, peak.json, monitor.log, hand.json,
# report/report.html, gpu-tests.xml/.txt, results.sqlite, a .log per step, steps.tsv and
# summary.txt (one line per check: PASS / FAIL / SKIP / INFO; docs/gpu-results.md explains them).
#
# The steps run most important first: the tutorials' answer (CPU against GPU) before the engine's
# own proofs, so a budget that runs out leaves the evidence that was never gathered before. Each
# step has its own cap and never runs into the RESERVE_S the report needs, all within
# GPU_CHECK_BUDGET_S (default 470 s): the whole check ends within 8 minutes. A step cut short
# keeps what it saved (`run` writes its JSON and database rows when stopped).
# Without a GPU it runs a small CPU pipeline instead, every GPU line says "SKIP: no GPU", exit 0.
# GPU_CHECK_PLAN=gpu|cpu runs nothing: it writes the steps of that mode to $OUT/plan.tsv, each with
# the limit it would get if every step before it took its whole cap, and its command
# (tests/cli/test_gpu_check_script.py checks the order, the budget and every command's options).
# Exit status: 1 when a summary line is FAIL, else 0.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT" || exit 2
PY=${PYTHON:-python3}
OUT=${OUT:-$ROOT/gpu-check-out/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 2
BUDGET_S=${GPU_CHECK_BUDGET_S:-470}
RESERVE_S=45          # the report and the GPU-marked tests, after every measuring step
PEAK_MAX_S=120        # accelbench peak's search and hold (issue 33: within 3 minutes on an H200)
PEAK_START_S=30       # its start-up (torch, the inventory) and its final check, beyond the budget
PEAK_KEPT_S=90        # kept back for the peak (a 60 s search and hold) by every step before it
KEEP_S=$((RESERVE_S + PEAK_KEPT_S))   # what the steps before the peak leave; the peak resets it
PLAN=${GPU_CHECK_PLAN:-}
START=$SECONDS
: > "$OUT/steps.tsv"
[[ -n $PLAN ]] && : > "$OUT/plan.tsv"

export PYTHONPATH="$ROOT/src${PYTHONPATH:+:$PYTHONPATH}"
export ACCELBENCH_DB="$OUT/results.sqlite"     # this check's results only, beside its other files
export XDG_CONFIG_HOME="$OUT/config"           # no `accelbench setup` choices of this user steer it
export XLA_PYTHON_CLIENT_PREALLOCATE=false     # jax must not hold the GPU's memory while torch runs
export MPLBACKEND=Agg PYTHONUNBUFFERED=1

PLANNED_S=0  # a plan's clock: every step planned so far took its whole limit

elapsed() {
  if [[ -n $PLAN ]]; then echo "$PLANNED_S"; else echo $((SECONDS - START)); fi
}

# seconds of the budget left once RESERVE seconds are kept back (never below 0)
time_left() {
  local left=$((BUDGET_S - $(elapsed) - $1))
  echo $((left > 0 ? left : 0))
}

# bounded LIMIT COMMAND...: at most LIMIT seconds, then SIGTERM (a run saves what it measured)
bounded() {
  local limit=$1
  shift
  if command -v timeout >/dev/null; then
    timeout --kill-after=10 "$limit" "$@"
  else  # no coreutils timeout: the step runs unbounded rather than not at all
    "$@"
  fi
}

# planned NAME CAP_S COMMAND...: one line of plan.tsv, the command's words separated by tabs
planned() {
  local IFS=$'\t'
  printf '%s\n' "$*" >>"$OUT/plan.tsv"
}

# step NAME CAP_S RESERVE_S STDOUT STDERR COMMAND...: at most CAP_S seconds, and never into the
# RESERVE_S seconds the steps after it need; records "NAME<TAB>exit status<TAB>seconds" in steps.tsv.
step() {
  local name=$1 cap=$2 reserve=$3 stdout=$4 stderr=$5
  shift 5
  local left limit
  left=$(time_left "$reserve")
  limit=$((cap < left ? cap : left))
  if [[ -n $PLAN ]]; then
    ((limit < 5)) && limit=0
    planned "$name" "$limit" "$@"
    PLANNED_S=$((PLANNED_S + limit))
    return 0
  fi
  if ((limit < 5)); then
    printf '%s\t124\t0\n' "$name" >>"$OUT/steps.tsv"
    echo "== $name: skipped, no time left in the ${BUDGET_S} s budget"
    return 124
  fi
  echo "== $name (at most ${limit} s)"
  local began=$SECONDS rc
  bounded "$limit" "$@" >"$stdout" 2>"$stderr"
  rc=$?
  printf '%s\t%d\t%d\n' "$name" "$rc" $((SECONDS - began)) >>"$OUT/steps.tsv"
  ((rc == 0)) || echo "   exit status $rc (see $(basename "$stderr"))"
  return $rc
}

# `accelbench monitor` in the background while the next step runs: NVML's view of cuda:0 under load
MONITOR_PID=
monitor_start() {
  local seconds=$1
  local command=("$PY" -m accelbench monitor --duration "$seconds" --interval 0.5)
  if [[ -n $PLAN ]]; then
    planned monitor "$seconds" "${command[@]}"
    return 0
  fi
  MONITOR_BEGAN=$SECONDS
  bounded $((seconds + 20)) "${command[@]}" >"$OUT/monitor.log" 2>"$OUT/monitor.err" &
  MONITOR_PID=$!
}
monitor_end() {
  [[ -z $MONITOR_PID ]] && return 0
  wait "$MONITOR_PID"
  local rc=$?
  printf 'monitor (beside the step before)\t%d\t%d\n' "$rc" $((SECONDS - MONITOR_BEGAN)) >>"$OUT/steps.tsv"
  MONITOR_PID=
}

run_id() { "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["run_id"])' "$1" 2>/dev/null; }

# run NAME CAP ARGS...: `accelbench run ARGS --json` into run-NAME.json, its stderr in run-NAME.log,
# leaving KEEP_S seconds of the budget to the steps after it
run() {
  local name=$1 cap=$2
  shift 2
  step "run-$name" "$cap" "$KEEP_S" "$OUT/run-$name.json" "$OUT/run-$name.log" \
    "$PY" -m accelbench run "$@" --json --no-progress
}

step detect 30 0 "$OUT/detect.log" "$OUT/detect.err" "$PY" scripts/gpu_handloops.py --detect "$OUT/mode.json"
if [[ -n $PLAN ]]; then
  gpu=$([[ $PLAN == gpu ]] && echo 1 || echo 0)
else
  gpu=$("$PY" -c 'import json, sys; print(int(json.load(open(sys.argv[1]))["gpu"]))' "$OUT/mode.json" 2>/dev/null || echo 0)
  cat "$OUT/detect.log" 2>/dev/null
fi

# every device and deviceQuery's fields; seconds, and the summary names every device from it
step info 40 "$KEEP_S" "$OUT/info.json" "$OUT/info.log" "$PY" -m accelbench info --all --json

if [[ $gpu == 1 ]]; then
  BOTH=(--device cpu,cuda:0)
  # 1. the tutorials' question: the quick suite on the CPU (one core, all cores) and on the GPU
  run quick-suite 80 "${BOTH[@]}" --backend numpy,torch --rigor quick --timeout 30
  # 2. the R tutorial's sweep: orders 1000-3000 in every dtype, `monitor` watching beside it
  monitor_start 30
  run seed-matmul 80 matmul --sizes 1000,2000,3000 --dtype float64,float32,float16,bfloat16 \
    "${BOTH[@]}" --backend numpy,torch --rigor quick --timeout 30
  monitor_end
  run stats 50 montecarlo bootstrap integrate simstudy distance mcmc "${BOTH[@]}" --backend numpy,torch \
    --rigor quick --timeout 20
  # 3. the deep-learning tutorials: the trainers at their batch sizes (to the target accuracy), then
  # VGG at 224x224, batch 8; a CPU spec that cannot finish in --timeout is stored as failed, named so
  run dl-train 70 mlp cnn lstm amp augment ddp "${BOTH[@]}" --backend torch --rigor quick --timeout 25
  run dl-vgg-infer 45 vgg-infer --sizes 8 --dtype float32 "${BOTH[@]}" --backend torch --rigor standard --timeout 15
  run dl-transfer 45 transfer --sizes 8 "${BOTH[@]}" --backend torch --rigor standard --timeout 15
  run keras-torch 20 mlp vgg-infer "${BOTH[@]}" --backend keras-torch --rigor quick --timeout 15
  run keras-jax 20 mlp vgg-infer "${BOTH[@]}" --backend keras-jax --rigor quick --timeout 15
  run cupy-jax 40 matmul stream "${BOTH[@]}" --backend numpy,cupy,jax --rigor quick --timeout 15
  # its own settings file: the choice must not steer the runs after it
  step setup 20 "$KEEP_S" "$OUT/setup.log" "$OUT/setup.err" \
    "$PY" -m accelbench setup --device cuda:0 --yes --settings "$OUT/setup-settings.toml"
  # 4. maximum and sustained: the budget shrinks to what is left (at least the 60 s kept for it)
  KEEP_S=$RESERVE_S
  peak_budget=$(($(time_left "$RESERVE_S") - PEAK_START_S))
  peak_budget=$((peak_budget > PEAK_MAX_S ? PEAK_MAX_S : peak_budget))
  if ((peak_budget >= 30)) || [[ -n $PLAN ]]; then
    step peak $((peak_budget + PEAK_START_S)) "$RESERVE_S" "$OUT/peak.json" "$OUT/peak.log" \
      "$PY" -m accelbench peak --device cuda:0 --budget "$peak_budget" --json
  else
    printf 'peak\t124\t0\n' >>"$OUT/steps.tsv"
    echo "== peak: skipped, ${peak_budget} s left for its search"
  fi
  # 5. the engine against hand-written loops (passed on an H200 three times: docs/gpu-results.md)
  run matmul-8192 45 matmul --sizes 8192 --dtype bfloat16 --device cuda:0 --backend torch --rigor standard
  # right after accelbench's matmul, so both see the GPU at the same temperature and clocks
  step hand-loops 30 "$RESERVE_S" "$OUT/hand.log" "$OUT/hand.err" "$PY" scripts/gpu_handloops.py --out "$OUT/hand.json"
  # what NVML's sample buffers deliver on this board (the telemetry source reads around their gaps)
  step nvml-buffers 15 "$RESERVE_S" "$OUT/nvml-buffers.log" "$OUT/nvml-buffers.err" \
    "$PY" scripts/nvml_buffers.py "$OUT/nvml-buffers.json" --seconds 3
else
  run cpu 120 matmul --sizes 256 --dtype float32 --device cpu --backend numpy --rigor quick
  step peak 40 "$RESERVE_S" "$OUT/peak.json" "$OUT/peak.log" \
    "$PY" -m accelbench peak --device cpu --budget 8 --orders 64,128 --json
  step hand-loops 60 "$RESERVE_S" "$OUT/hand.log" "$OUT/hand.err" "$PY" scripts/gpu_handloops.py --out "$OUT/hand.json"
fi

runs=()
for document in "$OUT"/run-*.json; do
  id=$(run_id "$document") && [[ -n $id ]] && runs+=("$id")
done
if ((${#runs[@]})) || [[ -n $PLAN ]]; then
  step report 60 20 "$OUT/report.log" "$OUT/report.err" "$PY" -m accelbench report "${runs[@]:-latest}" -o "$OUT/report"
else
  echo "== report: no run to report on"
  printf 'report\t1\t0\n' >>"$OUT/steps.tsv"
fi

step gpu-tests 90 5 "$OUT/gpu-tests.txt" "$OUT/gpu-tests.err" \
  "$PY" -m pytest -q -p no:cacheprovider -m gpu --run-gpu tests/gpu --junitxml="$OUT/gpu-tests.xml"

if [[ -n $PLAN ]]; then
  echo "plan: $OUT/plan.tsv"
  exit 0
fi
echo "== summary ($((SECONDS - START)) s so far)"
"$PY" scripts/gpu_summary.py "$OUT"
status=$?
echo "files: $OUT"
exit $status
