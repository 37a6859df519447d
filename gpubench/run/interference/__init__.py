"""The interference reference: a fixed workload timed alone and beside the
other lanes, its timing in a run, and a recent one reused."""
