"""External tools and what they say: Nsight Compute, Nsight Systems, compute-sanitizer,
torch.profiler traces of any program: command lines, pure parsers, the drivers that run a
point under a tool, and each tool's own view."""
