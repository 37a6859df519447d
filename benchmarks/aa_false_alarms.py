"""The A/A false-alarm rate of `gpubench ab` over a suite (issue 63's acceptance): every
family against an identical copy of itself (`ab --aa`), every point and mode, and one
table of what came back.

    python benchmarks/aa_false_alarms.py [--families square,softmax,...] [--modes cold,warm]
        [--dtype all] [--out DIR] [--resume] [-- EXTRA AB OPTIONS]

Per family: the points decided, the false FASTER/SLOWER (an A/A has no true change), the
UNSURE points and those among them for lack of blocks, the median detectable change at 80%
power, and the family's suite line (the geometric-mean change of its decided points, 95%
CI); then the totals, with the suite line over every point of every family. The families'
`ab` records stay under --out (with --resume, a family already recorded there is read, not
run again: a suite split over two GPU calls). The bar: 0 false verdicts over at least 200
points of six families, a suite CI that covers 0, and at most 5% UNSURE for lack of blocks.
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

from gpubench.analysis.suite import SuitePoint, SuiteSummary, summarize

SHIPPED = ("square", "vector_add", "softmax", "layernorm", "bias_gelu", "matmul", "sgemm",
           "attention")
FALSE = ("FASTER", "SLOWER")


def run_family(family: str, modes: str, dtype: str, out: Path, extra: list[str],
               resume: bool = False) -> dict:
    """One `ab FAMILY --aa` into out/FAMILY; its verdicts and calibration from the record."""
    folder = out / family
    if resume and (folder / "results.json").is_file():
        return read_record(family, folder, "")
    done = subprocess.run([sys.executable, "-m", "gpubench", "ab", family, "--aa",
                           "--mode", modes, "--dtype", dtype, "--out", str(folder), *extra],
                          capture_output=True, text=True)
    return read_record(family, folder, (done.stderr or done.stdout)[-300:])


def read_record(family: str, folder: Path, error: str) -> dict:
    record = folder / "results.json"
    if not record.is_file():
        return {"family": family, "error": error}
    ab = json.loads(record.read_text())["meta"]["ab"]
    return {"family": family, "verdicts": ab["verdicts"], "aa": ab.get("aa", [])}


def suite(verdicts: list[dict]) -> SuiteSummary:
    """The suite line of these verdicts (analysis/suite.py), each interval at its own z."""
    return summarize(SuitePoint(v["verdict"], _number(v.get("ratio")), _number(v.get("low")),
                                _number(v.get("high")), _number(v.get("z")))
                     for v in verdicts)


def _number(value) -> float:
    return math.nan if value is None else float(value)


def suite_text(summary: SuiteSummary) -> str:
    if math.isnan(summary.ratio):
        return "-"
    covers = "covers 0" if summary.low <= 1 <= summary.high else "MISSES 0"
    return (f"{summary.change:+.3%} [{summary.low - 1:+.3%}, {summary.high - 1:+.3%}] "
            f"({covers})")


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
            "suite": suite(verdicts), "verdicts": verdicts,
            "error": found.get("error", "")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", default=",".join(SHIPPED))
    parser.add_argument("--modes", default="cold,warm")
    parser.add_argument("--dtype", default="all")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--resume", action="store_true",
                        help="read a family already recorded under --out instead of rerunning")
    parser.add_argument("extra", nargs="*", help="more `ab` options, after --")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="gpubench-aa-"))
    print(f"{'family':12} {'points':>6} {'false':>5} {'UNSURE':>6} {'short':>5} "
          f"{'detectable':>10}  suite change [95% CI]", flush=True)
    rows = []
    for family in (f for f in args.families.split(",") if f):  # each row as it comes
        r = row(run_family(family, args.modes, args.dtype, out, args.extra, args.resume))
        rows.append(r)
        size = "-" if math.isnan(r["detectable"]) else f"{r['detectable']:.2%}"
        print(f"{r['family']:12} {r['points']:6} {r['false']:5} {r['unsure']:6} "
              f"{r['short']:5} {size:>10}  {suite_text(r['suite'])} {r['error'][:60]}",
              flush=True)
    points = sum(r["points"] for r in rows)
    false, short = sum(r["false"] for r in rows), sum(r["short"] for r in rows)
    every = suite([v for r in rows for v in r["verdicts"]])
    print(f"{'all':12} {points:6} {false:5} {sum(r['unsure'] for r in rows):6} {short:5} "
          f"{'':>10}  {suite_text(every)}")
    print(f"suite counts: {dict(every.counts)}")
    print(f"false verdicts: {false} of {points} points; UNSURE for lack of blocks: "
          f"{short / points:.1%}" if points else "no point was decided")
    print(f"records: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
