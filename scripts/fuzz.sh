#!/usr/bin/env bash
# Builds the libFuzzer targets with ASan and UBSan in their own build folder
# and fuzzes each for SECONDS, starting from its seed corpus
# fuzz/corpus/<name> (and its dictionary fuzz/dict/<name>.dict, if any).
# The targets, one per reader of outside input (see docs/Testing.md):
#
#   import         ONNX models (lib/Import/ONNX)
#   cluster-spec   weftc --cluster=FILE (lib/Plan/ClusterSpec.cpp)
#   sharding-file  weftc --sharding-file (tools/weftc/ShardingFile.cpp)
#   pipeline-file  weftc --pipeline-file and the stage split
#                  (tools/weftc/Stages.cpp, lib/Transforms/Pipeline.cpp)
#   manifest       a package's manifest.json (tools/weft-run/Manifest.cpp)
#   tensor-pb      .pb tensor files (runtime/core/OnnxTensorFile.cpp)
#   tensor-npy     .npy tensor files (runtime/core/NpyFile.cpp)
#   reshard        weft-reshard's --shape/--from/--to and the resharding
#                  planner (lib/Plan/ReshardText.cpp, Reshard*.cpp)
#
#   scripts/fuzz.sh SECONDS [libFuzzer flags...]
#   WEFT_FUZZ_TARGETS="tensor-npy manifest" scripts/fuzz.sh 600
#   WEFT_FUZZ_PARALLEL=2 nice -n 19 scripts/fuzz.sh 600   # two at a time
#
# Exits non-zero when a run finds a crash, a leak, a timeout (-timeout, per
# input) or an out-of-memory (-rss_limit_mb); the input that caused it is saved
# under fuzz/crashes/<name>-... (git-ignored). Replay one with
#   build-fuzz/bin/weft-<name>-fuzzer fuzz/crashes/<name>-crash-...
# Each run's output is in build-fuzz/fuzz-logs/<name>.log; a summary line per
# target gives its executions and coverage (libFuzzer's cov: and ft:).
# Environment: WEFT_FUZZ_BUILD_DIR (default build-fuzz), WEFT_FUZZ_JOBS (build
# jobs), WEFT_FUZZ_TARGETS, WEFT_FUZZ_PARALLEL (targets at a time, default 1),
# WEFT_FUZZ_ONNX_CHECKER=1 (the importer also runs ONNX's checker), and the
# usual ASAN_OPTIONS / UBSAN_OPTIONS.
set -euo pipefail

if [[ $# -lt 1 || ! $1 =~ ^[0-9]+$ ]]; then
  echo "usage: $0 SECONDS [libFuzzer flags...]" >&2
  exit 2
fi
seconds=$1
shift

all_targets=(import cluster-spec sharding-file pipeline-file manifest tensor-pb
  tensor-npy reshard)
read -r -a targets <<<"${WEFT_FUZZ_TARGETS:-${all_targets[*]}}"
for name in "${targets[@]}"; do
  if [[ ! " ${all_targets[*]} " =~ " $name " ]]; then
    echo "$0: unknown target '$name' (targets: ${all_targets[*]})" >&2
    exit 2
  fi
done
parallel=${WEFT_FUZZ_PARALLEL:-1}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${WEFT_FUZZ_BUILD_DIR:-$root/build-fuzz}
crashes=$root/fuzz/crashes
logs=$build/fuzz-logs
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
build_targets=()
for name in "${targets[@]}"; do build_targets+=("weft-$name-fuzzer"); done
cmake --build "$build" --target "${build_targets[@]}" \
  ${WEFT_FUZZ_JOBS:+-j "$WEFT_FUZZ_JOBS"}

mkdir -p "$crashes" "$logs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

# fuzz NAME: runs one target; new inputs go to a working corpus in the build
# folder, the seeds in fuzz/corpus stay as committed.
fuzz() {
  local name=$1
  shift
  local dict=()
  if [[ -f $root/fuzz/dict/$name.dict ]]; then
    dict=("-dict=$root/fuzz/dict/$name.dict")
  fi
  mkdir -p "$build/corpus/$name"
  "$build/bin/weft-$name-fuzzer" "$build/corpus/$name" \
    "$root/fuzz/corpus/$name" "${dict[@]}" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=2048 -max_len=16384 -print_final_stats=1 \
    -artifact_prefix="$crashes/$name-" "$@" >"$logs/$name.log" 2>&1
}

# summarize NAME STATUS: one line from the run's final statistics.
summarize() {
  local name=$1 status=$2 log=$logs/$1.log
  local execs cov ft
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -oE ' cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
  ft=$(grep -oE ' ft: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || true)
  if [[ $status -eq 0 ]]; then
    printf '%-14s ok      %10s execs  cov %6s  ft %6s\n' "$name" \
      "${execs:-?}" "${cov:-?}" "${ft:-?}"
  else
    printf '%-14s FAILED  (exit %s), see %s:\n' "$name" "$status" "$log"
    local report
    report=$(grep -E 'ERROR:|SUMMARY:|runtime error:|fuzzer: |Test unit' \
      "$log" | head -8 || true)
    sed 's/^/    /' <<<"${report:-$(tail -3 "$log")}"
  fi
}

failures=0
declare -A pids=()
finish_one() {
  local pid name status=0
  wait -n -p pid "${!pids[@]}" || status=$?
  name=${pids[$pid]}
  unset "pids[$pid]"
  summarize "$name" "$status"
  [[ $status -eq 0 ]] || failures=$((failures + 1))
}
echo "fuzzing ${targets[*]}: ${seconds} s each, $parallel at a time"
for name in "${targets[@]}"; do
  while [[ ${#pids[@]} -ge $parallel ]]; do finish_one; done
  fuzz "$name" "$@" &
  pids[$!]=$name
done
while [[ ${#pids[@]} -gt 0 ]]; do finish_one; done
[[ $failures -eq 0 ]] || { echo "$failures target(s) failed" >&2; exit 1; }
