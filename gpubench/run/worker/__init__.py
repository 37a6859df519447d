"""The worker process (`python -m gpubench.run.worker`) and what runs in it: the
executor (build, check, time), its inputs and re-checks, the seal, the
tamper and health checks, the tracer."""
