#!/usr/bin/env bash
# The steps of gpubench.yml (this folder), one case each, so that the workflow stays a thin
# caller and tests/test_ci_example.py runs the same steps on a CPU.
#
#   FAMILY=square BASE_REF=origin/main bash steps.sh pr        # a pull request's check
#   FAMILY=square bash steps.sh nightly                        # the nightly series
#
# Environment: FAMILY (required); KERNELS_DIR (the folder holding the family, default
# kernels); BASE_REF (pr: the revision to pair against); DEVICE (default auto; cpu on a
# machine without a GPU); GPUBENCH_ARGS (extra timing options, e.g. --max-time 2).
# Exit codes are gpubench's: 13 when a point regressed (docs/guide.md's table).
set -uo pipefail
: "${FAMILY:?name the kernel family}"
KERNELS_DIR=${KERNELS_DIR:-kernels}
DEVICE=${DEVICE:-auto}
read -r -a EXTRA <<< "${GPUBENCH_ARGS:-}"

case ${1:-} in
  pr)
    # NEW is the checkout; BASE is the family's folder at the PR's base revision. The
    # record goes to gpubench-ab/, the comment's text to gpubench-comment.md (its first
    # line a marker, so the workflow updates one comment in place), then the exit code.
    : "${BASE_REF:?give the base revision}"
    rm -rf gpubench-ab  # this job's own record, made again on every push
    gpubench ab "$FAMILY" --kernels-dir "$KERNELS_DIR" --base-rev "$BASE_REF" \
      --device "$DEVICE" --out gpubench-ab --fail-on-regression "${EXTRA[@]}"
    code=$?
    if [ -d gpubench-ab ] && ! gpubench compare gpubench-ab --markdown gpubench-comment.md \
        > /dev/null; then
      [ "$code" -eq 0 ] && code=1
    fi
    exit "$code" ;;
  nightly)
    # One run of the family into the history store, then the check over its series.
    gpubench run "$FAMILY" --kernels-dir "$KERNELS_DIR" --device "$DEVICE" "${EXTRA[@]}" \
      || exit $?
    gpubench history "$FAMILY" --check --markdown gpubench-history.md ;;
  *)
    echo "usage: FAMILY=NAME bash steps.sh pr|nightly" >&2
    exit 2 ;;
esac
