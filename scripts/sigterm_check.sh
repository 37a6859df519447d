#!/usr/bin/env bash
# A `kill -TERM` of gpubench in the middle of a GPU run: exit 143, results kept, and no
# process left in the worker's session. Usage: bash scripts/sigterm_check.sh RUN_DIR
set -u
run_dir=$1
gpubench run matmul --sizes 4096 --out "$run_dir" > "$run_dir.out" 2>&1 &
pid=$!
for _ in $(seq 600); do  # until the worker is timing the naive kernel (builds come first)
  grep -q "matmul/naive" "$run_dir"/worker-*.log 2>/dev/null && break
  sleep 0.2
done
sleep 2
session=$(grep -h -m1 "^\[gpubench worker\] pid" "$run_dir"/worker-*.log | awk '{print $NF}')
echo "gpubench pid $pid, worker session $session; sending SIGTERM"
kill -TERM "$pid"
wait "$pid"
echo "gpubench exit code: $?"
sleep 1
echo "processes left in the worker session $session:"
ps -eo pid,sid,comm | awk -v s="$session" '$2 == s' | sed 's/^/  /'
echo "(end of list)"
python3 - "$run_dir" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1] + "/results.json"))["results"]
print("results.json:", [(r["variant"], r["status"], r["median_s"]) for r in rows])
PY
tail -3 "$run_dir.out"
