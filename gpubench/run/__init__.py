"""Running a plan: which points, in which order, on which workers (one per GPU, CPU workers
or Dask); the files a run leaves are gpubench/store/'s. The parent never prints: it emits
events that views (report/) and commands listen to. At this level: plan, schedule, runner,
pipeline, deriver, the build phase and its builder, machine, config (suite files),
timeline. By concern:
  lanes/         the parent's side of a worker: lane, process handle, protocol, trees
  worker/        the worker process (`python -m gpubench.run.worker`) and what runs in it
  judge/         the process each worker forks that checks outputs out of its reach
  ab/            `gpubench ab`'s pair tasks: two versions timed interleaved in one worker
  cluster/       points on Dask workers
  interference/  the interference reference: its probe, its timing, its cache
  reference/     the interference reference's own family
"""
