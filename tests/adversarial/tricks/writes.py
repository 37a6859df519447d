"""Writing the files later runs trust (issue 60): the ceilings cache and bytecode.

Written against gpubench as it is: the worker's ceilings live in <cache>/ceilings/<key>.json
(timing/ceilings.py), read by every later run; CPython runs a .pyc whose header carries its
source's mtime and size instead of the source. Nothing here changes this run's verdict: the
damage would be to the next runs, which is what the defences (the worker's sandbox,
run/worker/sandbox.py; the parent's copy of the ceilings, run/lanes/ceilings_guard.py;
trusted files imported from source, families/source_import.py) are for."""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import marshal
import struct
from pathlib import Path

import torch

# The forged ceilings' matmul rates: 100x the measured ones, so a row at 99% of the compute
# roof would read 1% of it (and a memory-bound label) in every later run.
FORGED_FACTOR = 100.0
# What the forged cache says it was measured by (the test after the suite looks for it).
FORGED_METHOD = "forged by a variant"
# The family spec whose bytecode is planted (a trusted module, imported in the worker and
# the judge): this suite's own, so nothing outside the checkout is touched.
SPEC = Path(__file__).resolve().parents[1] / "exploits_tamper" / "spec.py"


def rewrites_trusted_files(a, b, out):
    """Rewrites every ceilings cache file (rates 100x, measured "now", so no probe doubts
    it within the hour) and plants a .pyc for the suite's spec.py where CPython would look
    for it (its header the source's: CPython would run it), then works honestly. A refused
    write is raised: the row says what stopped it."""
    refused = []
    for forge in (forge_ceilings, _plant_bytecode):
        try:
            forge()
        except PermissionError as exc:
            refused.append(str(exc))
    if refused:
        raise PermissionError("; ".join(refused))
    torch.matmul(a, b, out=out)


def forge_ceilings() -> None:
    from gpubench.timing.ceilings import cache_dir

    for path in sorted(cache_dir().glob("*.json")):
        if path.name.endswith(".check.json"):
            continue
        data = json.loads(path.read_text())
        data["tflops"] = {k: v * FORGED_FACTOR for k, v in (data.get("tflops") or {}).items()}
        data["measured"] = dt.datetime.now(dt.UTC).isoformat()
        data["method"] = FORGED_METHOD
        with open(path, "w") as sink:  # in place: the folder may refuse a new file
            sink.write(json.dumps(data, indent=2))


def _plant_bytecode() -> None:
    """The spec's own code with a marker added, so that even where the write goes through
    the planted file changes nothing a test depends on."""
    stat = SPEC.stat()
    code = compile(SPEC.read_text() + "\nPLANTED = True\n", str(SPEC), "exec")
    target = Path(importlib.util.cache_from_source(str(SPEC)))
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(importlib.util.MAGIC_NUMBER
                       + struct.pack("<III", 0, int(stat.st_mtime) & 0xFFFFFFFF,
                                     stat.st_size & 0xFFFFFFFF)
                       + marshal.dumps(code))
