#!/usr/bin/env bash
# A `kill -TERM` of gpubench in the middle of a GPU run: exit 143, results kept, and no
# process left in the worker's session. Usage: bash scripts/sigterm_check.sh RUN_DIR
set -u
run_dir=$1
export GPUBENCH_DEBUG_PROCESSES=$run_dir.processes.log
gpubench run matmul --sizes 4096 --out "$run_dir" > "$run_dir.out" 2>&1 &
pid=$!
for _ in $(seq 600); do  # until the worker is timing the naive kernel (builds come first)
  grep -q "matmul/naive" "$run_dir"/worker-*.log 2>/dev/null && break
  sleep 0.2
done
sleep 2
session=$(grep -h -m1 "^\[gpubench worker\] pid" "$run_dir"/worker-*.log | awk '{print $NF}')
echo "gpubench pid $pid, worker session $session; sending SIGTERM"
echo "the worker's session before the signal:"
ps -eo pid,ppid,pgid,sid,stat,comm | awk -v s="$session" '$4 == s' | sed 's/^/  /'
kill -TERM "$pid"
wait "$pid"
echo "gpubench exit code: $?"
# Killed processes stay as zombies (state Z) until init reaps them; only others count.
for t in 0.2 1; do
  sleep "$t"
  echo "processes of the worker session $session after +${t}s (Z = dead, not yet reaped):"
  ps -eo pid,ppid,pgid,sid,stat,comm | awk -v s="$session" '$4 == s' | sed 's/^/  /'
  echo "  alive (not Z): $(ps -eo sid,stat | awk -v s="$session" '$1 == s && $2 !~ /^Z/' | wc -l)"
done
echo "(end of list)"
echo "kill log:"; cat "$run_dir.processes.log"
python3 - "$run_dir" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1] + "/results.json"))["results"]
print("results.json:", [(r["variant"], r["status"], r["median_s"]) for r in rows])
PY
tail -3 "$run_dir.out"
