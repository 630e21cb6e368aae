#!/usr/bin/env bash
# Installs what is missing, builds Weft and runs its main job on the bundled
# example model: import models/example/classifier.onnx for batch 1, fold and
# canonicalize it, and print a summary and the resulting IR.
#
#   scripts/demo.sh [MODEL.onnx [--input-shape=NAME=D0xD1x...]...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

stage "install dependencies" "$WEFT_ROOT/scripts/install-deps.sh"
mkdir -p "$WEFT_BUILD"
stage "configure" weft_configure
stage "build tools" weft_build weft-translate weft-opt

if [[ $# -eq 0 ]]; then
  model=$WEFT_ROOT/models/example/classifier.onnx
  shapes=(--input-shape=input=1x1x28x28)
else
  model=$1
  shift
  shapes=("$@")
fi
out=$WEFT_BUILD/demo
mkdir -p "$out"

run_demo() {
  "$WEFT_BUILD/bin/weft-translate" --import-onnx "$model" "${shapes[@]}" \
    -o "$out/imported.mlir"
  "$WEFT_BUILD/bin/weft-opt" "$out/imported.mlir" --canonicalize \
    --weft-print-summary -o "$out/canonical.mlir"
  echo
  echo "--- $out/canonical.mlir"
  cat "$out/canonical.mlir"
}
stage "import $(basename "$model")" run_demo
