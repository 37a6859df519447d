"""Dask's own log lines go to a file in the run folder, never to the terminal.

Why: a `--cluster local` run starts a scheduler (in this process) and one Dask worker
process per slot; each logs its start, its listening address and its stop at INFO on
stderr, amid gpubench's tables (38 lines for a two-worker run). They are worth keeping
for a lost worker, so they are written to `dask.log` in the run folder instead.

The parent redirects its "distributed" logger while the cluster is open
(`redirected_to`). A Dask worker process configures its logging when it imports Dask,
from Dask's `logging` setting: `worker_environ` is that setting as an environment
variable, set in each worker's environment (dask_local.py starts them).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

LOG_NAME = "dask.log"
# Dask's own default format, with the process id: the file is shared by every process
# of the cluster (appends of one short line each do not interleave).
FORMAT = "%(asctime)s %(process)d %(name)s %(levelname)s %(message)s"


def _swap_handlers(path: Path) -> tuple[list[logging.Handler], int, logging.Handler]:
    """Dask's "distributed" logger writes to `path` alone; returns what to restore."""
    logger = logging.getLogger("distributed")
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter(FORMAT))
    saved = (list(logger.handlers), logger.level, handler)
    for old in saved[0]:
        logger.removeHandler(old)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    return saved


@contextlib.contextmanager
def redirected_to(path: Path) -> Iterator[None]:
    """In this process, Dask's log lines go to `path` while the block runs."""
    handlers, level, handler = _swap_handlers(path)
    logger = logging.getLogger("distributed")
    try:
        yield
    finally:
        logger.removeHandler(handler)
        handler.close()
        for old in handlers:
            logger.addHandler(old)
        logger.setLevel(level)


def worker_environ(path: Path) -> dict[str, str]:
    """DASK_LOGGING: a `logging.config.dictConfig` that Dask applies when it is imported
    (Dask reads the variable's value as a Python literal)."""
    config = {"version": 1, "disable_existing_loggers": False,
              "formatters": {"dask": {"format": FORMAT}},
              "handlers": {"file": {"class": "logging.FileHandler", "filename": str(path),
                                    "formatter": "dask", "encoding": "utf-8"}},
              "loggers": {"distributed": {"level": "INFO", "handlers": ["file"],
                                          "propagate": False}}}
    return {"DASK_LOGGING": repr(config)}
