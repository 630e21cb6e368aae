#!/usr/bin/env bash
# Installs what is missing, builds Weft and runs every test: lit + FileCheck,
# gtest, the ONNX node conformance import, the SDK example, a short fuzz run
# of every fuzz target and the runtime's and lib/Plan's tests under
# sanitizers. Prints how long each stage took.
#
#   scripts/test.sh            # everything
#   WEFT_FUZZ_SECONDS=0 scripts/test.sh   # skip the fuzz smoke run
#   WEFT_SANITIZE_CI=0 scripts/test.sh    # skip the sanitizer stage
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
total_start=$SECONDS

stage "install dependencies" "$WEFT_ROOT/scripts/install-deps.sh"
mkdir -p "$WEFT_BUILD"
stage "configure" weft_configure
stage "build" weft_build
stage "tests (ctest)" ctest --test-dir "$WEFT_BUILD" --output-on-failure \
  -j "$(nproc)"
fuzz_seconds=${WEFT_FUZZ_SECONDS:-60}
if [[ $fuzz_seconds -gt 0 && -x $WEFT_ROOT/scripts/fuzz.sh ]]; then
  # A fixed seed and run count make the smoke run reproducible: it replays
  # the seed corpus and then the same mutations on every machine.
  stage "fuzz smoke run (each target: seed corpus + 4000 mutations)" \
    "$WEFT_ROOT/scripts/fuzz.sh" "$fuzz_seconds" -seed=1 -runs=4000
fi
if [[ ${WEFT_SANITIZE_CI:-1} != 0 ]]; then
  # Its own build folder (build-asan): the runtime, lib/Plan and their tests
  # under ASan + UBSan; scripts/sanitize.sh without --ci runs every test.
  stage "sanitizers (runtime and lib/Plan unit tests, 5 end-to-end cases)" \
    "$WEFT_ROOT/scripts/sanitize.sh" --ci
fi
echo "==> all stages done in $((SECONDS - total_start)) s"
