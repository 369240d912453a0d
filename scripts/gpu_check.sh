#!/usr/bin/env bash
# On a machine with a real accelerator: the GPU-marked tests, then the inventory and a small benchmark.
# Usage: scripts/gpu_check.sh   (from the repository root, in an environment where accelbench is installed)
set -uo pipefail
status=0
echo "== GPU-marked tests"
python3 -m pytest -q -m gpu --run-gpu tests || status=$?
echo "== accelbench info (all probes)"
python3 -m accelbench info --all || status=$?
if python3 -m accelbench --help 2>/dev/null | grep -q ' run '; then
  echo "== small benchmark"
  python3 -m accelbench run matmul --sizes 1000,2000 --dtype float32 --rigor quick --db "${TMPDIR:-/tmp}/gpu_check.sqlite" || status=$?
fi
exit $status
