"""Every verdict on a measured row, in one place: physics.py (a time no kernel can have:
SUSPECT), behaviour.py (work skipped on inputs seen before, work outside the timed window:
SUSPECT), noise.py (noise, clocks, a busy host), and derive.py, which finishes a group
with them (speedups, the roof position, warnings, SUSPECT). Pure: records in, records
out; a row's evidence (its Measurement, CheckResult, FreshEvidence, HostLoad) is read by
attribute."""
