#!/usr/bin/env bash
# The GPU acceptance run of `gpubench run` (issue 2), as sent through the device tool:
#   bash scripts/gpu-acceptance.sh        (writes logs under $OUT, or ./gpu-out)
# Installs gpubench without dependencies (the GPU image has torch, triton, click,
# rich, pandas), runs matmul and square twice each (the second run must reuse
# the builds) and the GPU-marked tests.
set -u
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
export COLUMNS=130 PYTHONUNBUFFERED=1
export GPUBENCH_CACHE_DIR=${GPUBENCH_CACHE_DIR:-/tmp/gpubench-cache}
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
} 2>&1 | tee "$OUT/env.txt"
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -3
timed() {  # timed NAME CMD...: run, tee to $OUT/NAME.txt, append the wall time
  local name=$1; shift
  local start=$(date +%s%N)
  "$@" 2>&1 | tee "$OUT/$name.txt"
  local rc=${PIPESTATUS[0]}
  local ms=$(( ($(date +%s%N) - start) / 1000000 ))
  printf 'exit %s, wall %d.%03d s: %s\n' "$rc" $((ms / 1000)) $((ms % 1000)) "$*" \
    | tee -a "$OUT/$name.txt" "$OUT/summary.txt"
}
timed matmul-1 gpubench run matmul --sizes 1024,4096
timed matmul-2 gpubench run matmul --sizes 1024,4096
timed square-1 gpubench run square --sizes 1048576,16777216
timed square-2 gpubench run square --sizes 1048576,16777216
${GPU_EXTRA:-true}
tar czf "$OUT/profiles.tgz" profiles
cat "$OUT/summary.txt"
