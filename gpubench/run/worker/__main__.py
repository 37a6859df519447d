"""`python -m gpubench.run.worker`: the worker process (process.py)."""

import sys

from gpubench.run.worker.process import main

if __name__ == "__main__":
    sys.exit(main())
