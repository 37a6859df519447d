"""`gpubench run --ncu`: a short Nsight Compute summary per passing variant (duration, top
SOL %, top hint), kept whole in results.json under "ncu"; the HTML report reads its hint.
No results.csv column: a summary is several numbers and a sentence."""

from gpubench.records.extras import ExtraSpec

NCU = ExtraSpec("ncu")
