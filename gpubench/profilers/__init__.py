"""Drivers and parsers for external profilers: ncu, nsys, torch.profiler."""
