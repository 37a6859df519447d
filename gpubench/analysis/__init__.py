"""Records in, verdicts out, pure: NEW vs BASE comparisons and the agreement of our times
with Nsight Compute's."""
