"""Nsight Systems: command lines and its stats reports."""
