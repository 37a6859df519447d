"""How a call becomes a trustworthy time: timers (one per mode), stopping rules, statistics,
noise warnings, clocks, the cold-mode calibration, the machine's measured ceilings and the
roofline. Knows nothing of families, runs or reports."""
