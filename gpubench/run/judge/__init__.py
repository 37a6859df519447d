"""The judge: a process of its own that decides whether a variant's outputs are right.

The worker runs the judged code, so anything it keeps there (a reference, a copy of the
inputs, the comparison, a leaderboard problem's check_implementation) is in reach of that
code: through sys.modules, gc, code objects. The judge holds all of it in another process:

    parent --open(task)/close--> judge          (control pipe: the task comes from the
    parent <--summary----------- judge           parent, never from the worker)
    worker --output bytes------> judge          (a socket and a memfd: outputs cross by
    worker <--CheckResult------- judge           copy; the worker needs the answer to go on)

It draws each set's inputs again from their seed with its own import of the family, makes
the float64 reference (or asks the problem's own check), compares, and tallies every
verdict of the task. After the worker's result, the parent reads the judge's tally
(ruling.py): a result the worker reports as passed stands only if every output the judge
saw passed and the check and the re-checks reached it at all.

The judge is forked from the worker before any variant code runs (server.py), then made
non-dumpable: a process of the same user can neither ptrace it nor read or write its
memory through /proc; gpubench's own process is non-dumpable too (dumpable.py), so its ends
of the judge's pipes are out of reach as well. Each summary echoes the nonce of the "close"
it answers and the digest of the task the judge loaded, and the judge refuses a second
"open" within a task (server.py, ruling.py): anything else on those pipes FAILs the task.
Variant code can still send it requests (which only add verdicts) or kill it (and the task
then cannot pass).
"""
