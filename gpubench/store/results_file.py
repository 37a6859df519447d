"""A run folder's results files, named and read back: the one module of the store that
the index of runs, the history store and the run folder all read, so that none of them
imports another to learn what a results.json is called or how it is parsed.

The documents themselves, and their JSON, are records/run.py's; folder.py writes these
files, run_index.py and history_store.py only look for them and read them.
"""

from __future__ import annotations

import json
from pathlib import Path

from gpubench.errors import UsageError
from gpubench.records.run import NewerSchema, RunDocument

RESULTS_JSON = "results.json"  # its presence marks a folder as holding a run's results
RESULTS_CSV = "results.csv"
# The largest results.json read: a run of 1,000 points in 4 modes, each row with a few
# thousand samples (~20 KB of JSON), is ~80 MB; 2 GiB is far past any run and still reads
# on a laptop, where a sparse or corrupt file of 20 GB would exhaust the memory.
MAX_RESULTS_BYTES = 2 << 30


def has_results(path: Path) -> bool:
    """Whether the folder holds a run's results (a run saved into it)."""
    return (path / RESULTS_JSON).exists()


def read_run(path: Path | str) -> RunDocument:
    """The run document in a run folder or a results.json file."""
    file = Path(path)
    if file.is_dir():
        file = file / RESULTS_JSON
    try:
        size = file.stat().st_size
        if size > MAX_RESULTS_BYTES:
            raise UsageError(f"{file} is not a readable run: {size / (1 << 30):.1f} GiB, past "
                             f"the {MAX_RESULTS_BYTES >> 30} GiB any run's results take")
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"no run results at {file}: {exc.strerror or exc}") from None
    except MemoryError:
        raise UsageError(f"{file} is not a readable run: too large for this "
                         "machine's memory") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{file} is not a gpubench results file: not UTF-8 text "
                         f"({exc.reason} at byte {exc.start})") from None
    try:
        return RunDocument.from_dict(json.loads(text))
    except NewerSchema as exc:
        raise UsageError(str(exc)) from None
    except RecursionError:  # json and restore_nonfinite descend recursively
        raise UsageError(f"{file} is not a gpubench results file: nested too deeply") from None
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"{file} is not a gpubench results file: {exc}") from None
