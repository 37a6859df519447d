"""`gpubench profile`: any Python program's kernels, from a torch.profiler trace.

child.py runs inside the program (starts the profiler, runs the script, exports the trace
whatever happens); kernels.py is the pure analysis of that trace; region.py is the context
manager a program uses to mark its steady state.
"""
