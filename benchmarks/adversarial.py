"""The exploit suite on this machine's GPU (or CPU), one table: variant, mode, status,
reason, expected verdict, and whether the verdict is the one expected.

    python benchmarks/adversarial.py [--device cuda|cpu] [--modes cold,graph,cupti]
                                     [--out DIR] [--markdown] [-- EXTRA gpubench run ARGS]

Runs every family of tests/adversarial/ in one `gpubench run` (the tamperers last), then
judges each row against tests/adversarial/expected.py, the table tests/test_adversarial.py
asserts. Exits 0 when every case got its verdict, 1 when one did not (cases listed in
expected.PENDING_DEFENCES are marked `pending` and do not count), 2 when the run left no
results. The gap list at the end names the hostile variants that PASS.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ADVERSARIAL = REPO / "tests" / "adversarial"


def load_expected():
    spec = importlib.util.spec_from_file_location("adversarial_expected",
                                                  ADVERSARIAL / "expected.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def run(device: str, modes: str, out: Path, extra: list[str], families) -> Path | None:
    command = [sys.executable, "-m", "gpubench", "run", *families, "--kernels-dir",
               str(ADVERSARIAL), "--device", device, "--out", str(out), "--force", *extra]
    if device == "cuda":
        command += ["--mode", modes]
    print("$ " + " ".join(command[1:]), flush=True)
    with open(out.parent / f"{out.name}.log", "w") as log:
        subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, env=os.environ.copy())
    results = out / "results.json"
    return results if results.is_file() else None


def judged_rows(results: Path, expected, device: str) -> list[dict]:
    rows = json.loads(results.read_text())["results"]
    by_mode: dict[str, dict[str, dict]] = {}
    for row in rows:
        by_mode.setdefault(row["mode"], {})[f"{row['family']}/{row['variant']}"] = row
    table = []
    for row in rows:
        key = f"{row['family']}/{row['variant']}"
        if key not in expected.EXPECTED or not expected.runs_on(key, device):
            continue
        verdict = expected.judge(key, row, by_mode[row["mode"]])
        table.append({"variant": key, "mode": row["mode"], "status": row["status"].upper(),
                      "median": _time(row.get("median_s")),
                      "reason": (row.get("error") or "")[:70],
                      "expected": expected.EXPECTED[key].verdict,
                      "ok": "yes" if verdict.ok else
                            ("pending" if expected.pending(key, device) else "NO"),
                      "why": "" if verdict.ok else verdict.why})
    return table


def _time(seconds) -> str:
    if not seconds:
        return "-"
    for unit, scale in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds:.2g} s"


COLUMNS = ("variant", "mode", "status", "median", "reason", "expected", "ok")


def print_table(table: list[dict], markdown: bool) -> None:
    if markdown:
        print("| " + " | ".join(COLUMNS) + " |")
        print("|" + "---|" * len(COLUMNS))
        for row in table:
            print("| " + " | ".join(str(row[c]).replace("|", "/") for c in COLUMNS) + " |")
        return
    widths = {c: max(len(c), *(len(str(r[c])) for r in table)) for c in COLUMNS}
    print("  ".join(c.ljust(widths[c]) for c in COLUMNS))
    for row in table:
        print("  ".join(str(row[c]).ljust(widths[c]) for c in COLUMNS))


def summary(table: list[dict], expected) -> int:
    gaps = sorted({f"{r['variant']} [{r['mode']}]" for r in table
                   if r["status"] == "OK" and expected.EXPECTED[r["variant"]].verdict
                   not in (expected.PASS, expected.NEUTRAL)})
    wrong = [r for r in table if r["ok"] == "NO"]
    pending = [r for r in table if r["ok"] == "pending"]
    print(f"\n{len(table)} cases: {len(table) - len(wrong) - len(pending)} as expected, "
          f"{len(pending)} pending a defence, {len(wrong)} wrong")
    print("gap list (hostile variants that PASS): " + (", ".join(gaps) or "none"))
    for row in wrong + pending:
        print(f"  {row['ok']:7} {row['variant']} [{row['mode']}]: {row['why']}")
    return 1 if wrong else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--modes", default=None, help="GPU modes (default: cold,graph,cupti)")
    parser.add_argument("--out", type=Path, default=None, help="folder for the run")
    parser.add_argument("--markdown", action="store_true", help="print a markdown table")
    parser.add_argument("extra", nargs="*", help="more `gpubench run` arguments (after --)")
    args = parser.parse_args()
    expected = load_expected()
    modes = args.modes or ",".join(expected.GPU_MODES)
    out = args.out or Path(tempfile.mkdtemp(prefix="gpubench-adversarial-")) / "run"
    out.parent.mkdir(parents=True, exist_ok=True)
    results = run(args.device, modes, out, args.extra, expected.FAMILIES)
    if results is None:
        print(f"the run left no results.json; its log: {out.parent / (out.name + '.log')}")
        return 2
    table = judged_rows(results, expected, args.device)
    print_table(table, args.markdown)
    return summary(table, expected)


if __name__ == "__main__":
    sys.exit(main())
