"""`gpubench ab` inside the worker: two versions of a variant built side by side and timed
in pairs, interleaved in random order in one process (calls.py: the interleaving as the
timers' TimedCalls; pair.py: a pair task from check to result). The parent's side is
commands/ab.py; the statistics are timing/paired.py and analysis/ab.py."""
