#!/usr/bin/env bash
# Builds the ONNX importer fuzz target with libFuzzer, ASan and UBSan in its own
# build folder and fuzzes for SECONDS, starting from fuzz/corpus.
#
#   scripts/fuzz.sh SECONDS [libFuzzer flags...]
#
# Exits non-zero when the run finds a crash, a leak, a timeout (-timeout, per
# input) or an out-of-memory (-rss_limit_mb); the input that caused it is saved
# under fuzz/crashes/ (git-ignored). Replay one with
#   build-fuzz/bin/weft-import-fuzzer fuzz/crashes/crash-...
# Environment: WEFT_FUZZ_BUILD_DIR (default build-fuzz), WEFT_FUZZ_JOBS (build
# jobs), WEFT_FUZZ_ONNX_CHECKER=1 (also run ONNX's checker), and the usual
# ASAN_OPTIONS / UBSAN_OPTIONS.
set -euo pipefail

if [[ $# -lt 1 || ! $1 =~ ^[0-9]+$ ]]; then
  echo "usage: $0 SECONDS [libFuzzer flags...]" >&2
  exit 2
fi
seconds=$1
shift

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${WEFT_FUZZ_BUILD_DIR:-$root/build-fuzz}
crashes=$root/fuzz/crashes
# Fuzzing-speed code (-O1) with line tables for the sanitizers' reports.
sanitize="-fsanitize=fuzzer-no-link,address,undefined"
sanitize+=" -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
sanitize+=" -gline-tables-only"

if [[ ! -f $build/build.ninja ]] || ! grep -q "WEFT_BUILD_RUNTIME:BOOL=OFF" "$build/CMakeCache.txt"; then
  CC=clang-22 CXX=clang++-22 cmake -S "$root" -B "$build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" \
    -DCMAKE_C_FLAGS="$sanitize" -DCMAKE_CXX_FLAGS="$sanitize" \
    -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
    -DWEFT_BUILD_FUZZERS=ON -DWEFT_ENABLE_TESTS=OFF -DWEFT_BUILD_RUNTIME=OFF
fi
cmake --build "$build" --target weft-import-fuzzer \
  ${WEFT_FUZZ_JOBS:+-j "$WEFT_FUZZ_JOBS"}

# New inputs go to a working corpus in the build folder; the seeds in
# fuzz/corpus stay as committed.
mkdir -p "$build/corpus" "$crashes"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
exec "$build/bin/weft-import-fuzzer" "$build/corpus" "$root/fuzz/corpus" \
  -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
  -malloc_limit_mb=2048 -max_len=16384 -print_final_stats=1 \
  -artifact_prefix="$crashes/" "$@"
