set -u
export COLUMNS=140 PYTHONUNBUFFERED=1 GPUBENCH_CACHE_DIR=/tmp/gpubench-cache
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site $(ls .whl/*.whl) >/dev/null 2>&1; export PYTHONPATH=/tmp/site
python3 -m pip install -q --no-deps --no-build-isolation -e . >/dev/null 2>&1
nvidia-smi --query-gpu=name,clocks.sm,temperature.gpu,utilization.gpu --format=csv,noheader
python3 benchmarks/run_cost.py --base .base --pairs 2 -- matmul --sizes 1024,4096 2>&1 | tail -25
