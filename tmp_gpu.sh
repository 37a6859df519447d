#!/usr/bin/env bash
# one-off device script (not committed): short rows with enough rows that launch is not the story
set -u
export COLUMNS=140 PYTHONUNBUFFERED=1 GPUBENCH_CACHE_DIR=/tmp/gbc
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site $(ls .whl/*.whl | grep -v ncu_report) && export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -2
LOG=$OUT/h200-short-rows.txt
R="--min-time 50 --max-time 200"
x() { echo "=== $* $R"; local s=$(date +%s); "$@" $R; echo "exit $? $(( $(date +%s)-s ))s"; }
{
date -u
x gpubench run softmax --shape rows=4096,cols=1024 --shape rows=65536,cols=1024 --dtype all --variants block_reduce,triton --out /tmp/r/sm
x gpubench run layernorm --shape rows=8192,cols=1024 --shape rows=65536,cols=1024 --dtype all --out /tmp/r/ln
x gpubench run vector_add --sizes 2^22,2^28 --dtype fp16 --variants vectorized --out /tmp/r/va
} > $LOG 2>&1
grep -E "^(softmax|layernorm|vector_add) |(block_reduce|warp|triton|vectorized|torch) .*(PASS|FAIL)|FAIL" $LOG | cut -c1-125
