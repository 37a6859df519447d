set -u
export COLUMNS=140 PYTHONUNBUFFERED=1 GPUBENCH_CACHE_DIR=/tmp/gpubench-cache
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $(ls .whl/*.whl) >/dev/null 2>&1; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
python3 -m pytest -q -p no:cacheprovider -m gpu tests/test_adversarial.py tests/test_judge.py --basetemp /tmp/pt 2>&1 | grep -E "passed|failed|^FAILED|AssertionError" | cut -c1-400
d=$(ls -d /tmp/pt/adversarial-gpu*/run | head -1); tar czf $OUT/suite-logs.tgz -C $d . 2>/dev/null
python3 benchmarks/run_cost.py --base .base --pairs 5 -- matmul --sizes 1024,4096 2>&1 | tail -23
