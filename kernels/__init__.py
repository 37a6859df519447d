"""The kernel families shipped with gpubench: one folder each, with a spec.py.

Installed as the data package `gpubench_kernels`; nothing imports it as code.
"""
