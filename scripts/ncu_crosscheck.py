"""Cross-check: every OPT/WRN hint ncu's own `--page details` lists must appear in gpubench's view.

    python scripts/ncu_crosscheck.py REPORT.ncu-rep [...]   (needs ncu on PATH, no GPU)

For each report: ncu --import REPORT --page details (ncu's own text), parsed for its OPT and
WRN lines; gpubench's reading of the same report (ncu_report, ranked hints). Prints both
lists side by side, matched by message text, and exits 1 if ncu lists a hint gpubench lacks.
"""

import subprocess
import sys

from gpubench.tools.ncu.console import parse_details_hints
from gpubench.tools.ncu.report import load_profiles
from gpubench.tools.ncu.rules import clean_message


def key(text: str) -> str:
    return " ".join(clean_message(text).split())[:70]


def check(report: str, ncu: str = "ncu") -> bool:
    text = subprocess.run([ncu, "--import", report, "--page", "details"], capture_output=True,
                          text=True, timeout=300).stdout
    theirs = [r for k in parse_details_hints(text) for r in k.rules if r.type in ("OPT", "WRN")]
    ours = [r for p in load_profiles(report) for r in p.hints()]
    our_keys = {key(r.message) for r in ours}
    print(f"\n== {report}: ncu --page details lists {len(theirs)} OPT/WRN, gpubench shows "
          f"{len(ours)} (ranked)")
    print(f"{'ncu --page details':<58} | {'gpubench (rank. type est. speedup  title)':<60}")
    ranked = {key(r.message): (i + 1, r) for i, r in enumerate(ours)}
    missing = 0
    for rule in theirs:
        hit = ranked.get(key(rule.message))
        missing += hit is None
        speed = f"{rule.estimated_speedup_pct or 0:.3g}% {rule.speedup_type or ''}"
        left = f"{rule.type} {speed:<14} {key(rule.message)[:38]}"
        right = (f"{hit[0]}. {hit[1].type} {hit[1].estimated_speedup_pct or 0:.3g}% "
                 f"{hit[1].speedup_type or ''} {hit[1].heading[:30]}" if hit else "MISSING")
        print(f"{left:<58} | {right}")
    extra = our_keys - {key(r.message) for r in theirs}
    print(f"all {len(theirs)} of ncu's hints shown" if not missing else f"{missing} MISSING",
          f"; gpubench shows {len(extra)} more (ncu prints those only with --print-details)"
          if extra else "")
    return missing == 0


if __name__ == "__main__":
    results = [check(path) for path in sys.argv[1:]]
    sys.exit(0 if results and all(results) else 1)
