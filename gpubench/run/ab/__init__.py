"""`gpubench ab`: two versions of a variant built side by side and timed in pairs,
interleaved in random order in one process.

In the worker: calls.py, the interleaving as the timers' TimedCalls; pair.py, a pair task
from check to result. In the parent: export.py, BASE from a git revision (checked against
git at every reuse); modules.py, the refusal of a module both versions would share;
rows.py, each side's rows judged as `run` judges its own, then the pairs' verdicts. The
command is commands/ab.py; the statistics are timing/paired.py and analysis/ab.py."""
