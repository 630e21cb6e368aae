#!/usr/bin/env bash
# Builds the runtime, lib/Plan and their tests with AddressSanitizer and
# UndefinedBehaviorSanitizer (GCC, -DWEFT_SANITIZE=address,undefined) in
# their own build folder and runs the tests once; prints a summary and exits
# non-zero on a failed test or on any sanitizer report.
#
#   scripts/sanitize.sh          # every unit test of the runtime and lib/Plan,
#                                # every driver and mesh test (weft-run too)
#   scripts/sanitize.sh --ci     # what CI runs: the unit tests and five named
#                                # end-to-end cases (scripts/test.sh)
#
# Every sanitized process, MPI ranks included, writes its reports to
# BUILD/sanitizer-logs/ (so a report from a test that expects a failing exit
# code is not lost); leaks of Open MPI's own are suppressed by
# scripts/sanitize/lsan.supp, which says why for each entry. See
# docs/Testing.md. Environment: WEFT_ASAN_BUILD (default build-asan),
# WEFT_ASAN_JOBS (build and test jobs, default nproc).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

mode=full
case "${1:-}" in
"") ;;
--ci) mode=ci ;;
*)
  echo "usage: $0 [--ci]" >&2
  exit 2
  ;;
esac
build=${WEFT_ASAN_BUILD:-$WEFT_ROOT/build-asan}
jobs=${WEFT_ASAN_JOBS:-$(nproc)}
supp=$WEFT_ROOT/scripts/sanitize

# The gtest suites of the runtime and lib/Plan (folder/binary, in the build).
unit_tests=(
  test/Runtime/core/WeftRuntimeCoreTests
  test/Runtime/cpu/WeftRuntimeKernelTests
  test/Runtime/comm/WeftMeshUnitTests
  test/Unit/WeftPlanClusterTests
  test/Unit/WeftPlanSolverTests
  test/Unit/WeftPlanReshardTests
  test/Unit/WeftPlanReshardTextTests
  test/Unit/WeftPlanStageCutTests
)
# Hand-written device programs linked with the sanitized runtime, and the
# collectives and pipelines (several meshes, transfers) under mpirun.
programs=(WeftDriverTestProgram WeftMeshTestProgram2 WeftMeshTestProgram4
  WeftCollectivesTest WeftPipelineTest WeftPipelineTestStage0
  WeftPipelineTestStage1)
# The CI subset of the end-to-end tests: a device program checking its
# outputs (.pb inputs), reading .npy inputs, benchmarking on 2 OpenMP
# threads; a 2-rank mesh program under mpirun; the collectives on 2 ranks.
ci_e2e='^(weft-driver-check-pass|weft-driver-npy-inputs|weft-driver-bench'
ci_e2e+='|weft-mesh-mpirun-check-2|weft-comm-collectives-2)$'

configure() {
  mkdir -p "$build"
  cmake -S "$WEFT_ROOT" -B "$build" -G Ninja \
    -DWEFT_SANITIZE=address,undefined \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS_RELEASE="-O1 -g1" -DCMAKE_CXX_FLAGS_RELEASE="-O1 -g1" \
    -DWEFT_BUILD_FUZZERS=OFF >"$build.configure.log" 2>&1 ||
    { cat "$build.configure.log" >&2; return 1; }
}

targets=("${programs[@]}")
for t in "${unit_tests[@]}"; do targets+=("$(basename "$t")"); done
# weft-run (LLVMSupport only) runs the mesh packages in the full run.
[[ $mode == full ]] && targets+=(weft-run)

# Reports go to files, one per process; halt on the first error with an exit
# code no test expects (the driver's own codes are 0 to 4 and 70).
logs=$build/sanitizer-logs
asan_options="detect_leaks=1:halt_on_error=1:exitcode=86:log_path=$logs/asan"
asan_options+=":check_initialization_order=1"
export ASAN_OPTIONS=$asan_options
export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
# Open MPI's plugins stay loaded, so that reports name them.
export OMPI_MCA_mca_base_component_disable_dlclose=1
export UBSAN_OPTIONS="halt_on_error=1:exitcode=86:print_stacktrace=1:log_path=$logs/ubsan"
# gtest_discover_tests runs each suite at build time: it must see the
# options too.
rm -rf "$logs"
mkdir -p "$logs"
stage "sanitize: configure ($build)" configure
stage "sanitize: build (${#targets[@]} targets)" \
  ninja -C "$build" -j "$jobs" "${targets[@]}"

failed=()
run_unit() {
  local binary=$build/$1
  echo "--- $(basename "$1")"
  if ! (cd "$build" && timeout 1200 "$binary" --gtest_brief=1); then
    failed+=("$(basename "$1")")
  fi
}
run_ctest() {
  if ! ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"; then
    failed+=("ctest $*")
  fi
}

start=$SECONDS
for t in "${unit_tests[@]}"; do run_unit "$t"; done
echo "==> sanitize: unit tests done in $((SECONDS - start)) s"
start=$SECONDS
# The end-to-end tests start MPI ranks, whose leak suppressions need whole
# allocation stacks (scripts/sanitize/lsan.supp); the unit tests run MPI
# nowhere and keep the fast unwinder (several times faster).
export ASAN_OPTIONS=$asan_options:fast_unwind_on_malloc=0
if [[ $mode == ci ]]; then
  run_ctest -R "$ci_e2e"
else
  run_ctest -L 'driver|mesh'
fi
echo "==> sanitize: end-to-end tests done in $((SECONDS - start)) s"

reports=$(find "$logs" -type f | sort)
echo "==> sanitize summary ($mode): ${#unit_tests[@]} unit test suites," \
  "$([[ $mode == ci ]] && echo "5 named end-to-end cases" ||
    echo "every driver and mesh test")"
if [[ -n $reports ]]; then
  echo "sanitizer reports ($(wc -l <<<"$reports")):"
  for f in $reports; do
    echo "--- $f"
    cat "$f"
  done
fi
if [[ ${#failed[@]} -gt 0 ]]; then
  printf 'failed: %s\n' "${failed[@]}"
fi
if [[ -n $reports || ${#failed[@]} -gt 0 ]]; then
  echo "==> sanitize: FAILED"
  exit 1
fi
echo "==> sanitize: no failures, no sanitizer reports"
