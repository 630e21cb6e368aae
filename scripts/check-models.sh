#!/usr/bin/env bash
# Compiles the development models of ../shared/models (not part of a user's
# clone, so this is a check for developers, not a ctest) with weftc at the
# input shapes of each of their test_data_set_<k> folders, runs every package
# on its folder and compares with the reference outputs (rtol 1e-3,
# atol 1e-4). Prints a table: weftc time, run time and the largest absolute
# and relative errors per model and data set; compilations over the issue's
# 10 s target are named (they do not fail the check). Exit 0 when all pass.
#
#   scripts/check-models.sh [MODELS_DIR] [--filter REGEX]
#   WEFT_BUILD=build-x scripts/check-models.sh        # another build's weftc
#
# Packages and the table stay in $WEFT_BUILD/check-models/ (or $WEFT_CHECK_OUT).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
models=$WEFT_ROOT/../shared/models
if [[ $# -gt 0 && $1 != --* ]]; then
  models=$1
  shift
fi
[[ -d $models ]] || { echo "check-models: no models at $models" >&2; exit 1; }
weftc=$WEFT_BUILD/bin/weftc
[[ -x $weftc ]] || { echo "check-models: no $weftc; build weftc first" >&2; exit 1; }
out=${WEFT_CHECK_OUT:-$WEFT_BUILD/check-models}
mkdir -p "$out"
/usr/bin/python3 "$WEFT_ROOT/test/E2E/run_e2e.py" --weftc "$weftc" \
  --out "$out" --models "$models" --compile-target 10 "$@" |
  tee "$out/table.txt"
exit "${PIPESTATUS[0]}"
