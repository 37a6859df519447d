"""Running a plan: which points, in which order, on which workers (one per GPU, CPU workers
or Dask), the worker process and its protocol, the judge each worker forks (judge/: the
references and the comparison, out of the judged code's reach), `gpubench ab`'s pair tasks
(ab/: two versions timed interleaved in one worker), run folders and suite files. The
parent never prints: it emits events that views (report/) and commands listen to."""
