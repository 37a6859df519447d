"""Compiling user C++/CUDA into a loaded extension: the content-hashed key, the cache and
its lock, the compiler command lines, the precompiled header, build errors at file:line.
Imports nothing of gpubench but the base modules."""
