#!/usr/bin/env bash
# The ladder on the H200 (docs/ladder.md): OUT=folder bash docs/ladder/measure.sh, with .whl/ carried.
set -u
export COLUMNS=140 PYTHONUNBUFFERED=1 GPUBENCH_CACHE_DIR=/tmp/gpubench-cache
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site $(ls .whl/*.whl | grep -v ncu_report) && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -3
R=$OUT/runs; mkdir -p $R
run() { local name=$1; shift; echo "=== $name: gpubench run $*"; local t=$(date +%s)
  timeout 200 gpubench run "$@" --out $R/$name 2>&1 | grep -v "^\[\|: .* \.\.\.$\|done in"
  echo "--- $name: exit ${PIPESTATUS[0]}, $(( $(date +%s) - t )) s"; }
run sgemm sgemm --sizes 4096 --ncu
run vector_add vector_add --sizes 2^27 --ncu
run matmul-bf16 matmul --sizes 4096 --dtype bf16 --variants torch,triton,triton_tc,wmma --ncu
run matmul-tc matmul --sizes 4096,8192 --dtype fp32,fp16,bf16 --variants torch,triton,triton_tc,wmma
run attention attention --dtype bf16
run softmax softmax --shape rows=4096,cols=8192 --ncu
run layernorm layernorm --shape rows=8192,cols=4096 --ncu
run bias_gelu bias_gelu --shape rows=8192,cols=16384 --ncu
run attention-ncu attention --dtype bf16 --shape B=4,H=32,S=4096,D=128,mask=2 --ncu
for d in $R/*/; do rm -rf $d/worker-*.log $d/ncu; done
tar czf $OUT/runs.tgz -C $OUT runs && rm -rf $R
