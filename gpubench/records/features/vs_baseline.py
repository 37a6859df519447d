"""`gpubench run --baseline RUN`: each result's Comparison with the same point of RUN
(analysis/comparison.py), for the table's `vs --baseline` column. Not saved: the verdict
is recomputed from both runs by `gpubench compare` whenever it is wanted."""

from gpubench.records.extras import ExtraSpec

VS_BASELINE = ExtraSpec("vs_baseline", saved=False)
