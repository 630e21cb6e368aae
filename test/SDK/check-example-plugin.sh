#!/usr/bin/env bash
# ctest's sdk-example-plugin (see CMakeLists.txt here):
#   check-example-plugin.sh BUILD_DIR EXAMPLE_DIR WORK_DIR CXX [LAUNCHER]
# Installs BUILD_DIR into WORK_DIR/prefix, configures and builds EXAMPLE_DIR
# against that prefix only, and runs the example's lit tests.
set -euo pipefail

build=$1
example=$2
work=$3
cxx=$4
launcher=${5:-}

rm -rf "$work"
mkdir -p "$work"
echo "== cmake --install $build --prefix $work/prefix"
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"

echo "== configure $example against $work/prefix"
cmake -S "$example" -B "$work/build" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_CXX_COMPILER="$cxx" \
  ${launcher:+-DCMAKE_CXX_COMPILER_LAUNCHER="$launcher"} \
  > "$work/configure.log" || { cat "$work/configure.log"; exit 1; }
grep "Using WeftConfig.cmake in: $work/prefix/" "$work/configure.log"

echo "== build"
cmake --build "$work/build"

echo "== lit tests with $work/prefix/bin/weft-opt"
cmake --build "$work/build" --target check
