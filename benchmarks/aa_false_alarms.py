"""The A/A false-alarm rate of `gpubench ab` over a suite (issue 63's acceptance): every
family against an identical copy of itself (`ab --aa`), every point and mode, and one
table of what came back.

    python benchmarks/aa_false_alarms.py [--families square,softmax,...] [--modes cold,warm]
        [--dtype all] [--out DIR] [-- EXTRA AB OPTIONS]

Per family: the points decided, the false FASTER/SLOWER (an A/A has no true change), the
UNSURE points and those among them for lack of blocks, and the median detectable change
at 80% power; then the totals. The families' `ab` records stay under --out, so
`gpubench compare DIR/FAMILY` shows any point again. The bar: 0 false verdicts over at least
200 points of six families, and at most 5% UNSURE for lack of blocks.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SHIPPED = ("square", "vector_add", "softmax", "layernorm", "bias_gelu", "matmul", "sgemm",
           "attention")
FALSE = ("FASTER", "SLOWER")


def run_family(family: str, modes: str, dtype: str, out: Path, extra: list[str]) -> dict:
    """One `ab FAMILY --aa` into out/FAMILY; its verdicts and calibration from the record."""
    folder = out / family
    done = subprocess.run([sys.executable, "-m", "gpubench", "ab", family, "--aa",
                           "--mode", modes, "--dtype", dtype, "--out", str(folder), *extra],
                          capture_output=True, text=True)
    record = folder / "results.json"
    if not record.is_file():
        return {"family": family, "error": (done.stderr or done.stdout)[-300:]}
    ab = json.loads(record.read_text())["meta"]["ab"]
    return {"family": family, "verdicts": ab["verdicts"], "aa": ab.get("aa", [])}


def row(found: dict) -> dict:
    verdicts = found.get("verdicts", [])
    short = [v for v in verdicts if v["verdict"] == "UNSURE" and "blocks of four" in
             (v.get("reason") or "")]
    sizes = [c["detectable"] for c in found.get("aa", [])
             if c.get("detectable") is not None and not math.isnan(c["detectable"])]
    return {"family": found["family"], "points": len(verdicts),
            "false": sum(v["verdict"] in FALSE for v in verdicts),
            "unsure": sum(v["verdict"] == "UNSURE" for v in verdicts),
            "short": len(short),
            "detectable": statistics.median(sizes) if sizes else math.nan,
            "error": found.get("error", "")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(SHIPPED))
    parser.add_argument("--modes", default="cold,warm")
    parser.add_argument("--dtype", default="all")
    parser.add_argument("--out", type=Path)
    parser.add_argument("extra", nargs="*", help="more `ab` options, after --")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="gpubench-aa-"))
    print(f"{'family':12} {'points':>6} {'false':>5} {'UNSURE':>6} {'short':>5} "
          f"{'detectable':>10}", flush=True)
    rows = []
    for family in (f for f in args.families.split(",") if f):  # each row as it comes
        r = row(run_family(family, args.modes, args.dtype, out, args.extra))
        rows.append(r)
        size = "-" if math.isnan(r["detectable"]) else f"{r['detectable']:.2%}"
        print(f"{r['family']:12} {r['points']:6} {r['false']:5} {r['unsure']:6} "
              f"{r['short']:5} {size:>10} {r['error'][:60]}", flush=True)
    points = sum(r["points"] for r in rows)
    false, short = sum(r["false"] for r in rows), sum(r["short"] for r in rows)
    print(f"{'all':12} {points:6} {false:5} {sum(r['unsure'] for r in rows):6} {short:5}")
    print(f"false verdicts: {false} of {points} points; UNSURE for lack of blocks: "
          f"{short / points:.1%}" if points else "no point was decided")
    print(f"records: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
