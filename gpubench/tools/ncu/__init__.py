"""Nsight Compute: command lines, the .ncu-rep reader, rules and hints, source lines, views."""
