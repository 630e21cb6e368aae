#!/usr/bin/env bash
# Installs what is missing, builds Weft and runs its main job on the bundled
# example model: compile models/example/classifier.onnx for the default
# cluster (one CPU device), print the plan, run the package on the bundled
# inputs and print and check the results; then compile it as a pipeline of 2
# stages for a cluster of 2 CPU devices of this machine (the stage table is
# printed), run it as 2 MPI ranks and check it against the one-device
# outputs.
#
#   scripts/demo.sh [MODEL.onnx DATA_DIR [--input-shape=NAME=D0xD1x...]...]
#
# DATA_DIR is an ONNX test-data folder (input_*.pb, and output_*.pb to check).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

stage "install dependencies" "$WEFT_ROOT/scripts/install-deps.sh"
mkdir -p "$WEFT_BUILD"
stage "configure" weft_configure
stage "build" weft_build weftc weft-run

if [[ $# -eq 0 ]]; then
  model=$WEFT_ROOT/models/example/classifier.onnx
  data=$WEFT_ROOT/models/example/test_data_set_0
  shapes=(--input-shape=input=2x1x28x28)
elif [[ $# -ge 2 ]]; then
  model=$1
  data=$2
  shift 2
  shapes=("$@")
else
  echo "usage: $0 [MODEL.onnx DATA_DIR [--input-shape=NAME=D0xD1x...]...]" >&2
  exit 1
fi
package=$WEFT_BUILD/demo/$(basename "$model" .onnx)

compile() {
  "$WEFT_BUILD/bin/weftc" "$model" "${shapes[@]}" -o "$package"
  echo
  echo "--- the plan (weftc --emit=plan --report)"
  "$WEFT_BUILD/bin/weftc" "$model" "${shapes[@]}" -o "$package.plan" \
    --emit=plan --report --quiet
  echo
  echo "--- $package/manifest.json"
  cat "$package/manifest.json"
}
run() {
  "$WEFT_BUILD/bin/weft-run" "$package" --inputs "$data"
  if compgen -G "$data/output_*.pb" >/dev/null; then
    echo
    "$WEFT_BUILD/bin/weft-run" "$package" --inputs "$data" --check "$data"
  fi
}
stage "compile $(basename "$model")" compile
stage "run $(basename "$package")" run
pipeline() {
  "$WEFT_BUILD/bin/weft-run" "$package" --inputs "$data" --quiet \
    --output-dir "$package.outputs"
  "$WEFT_BUILD/bin/weftc" "$model" "${shapes[@]}" -o "$package.pipeline" \
    --cluster cpu:2 --stages=2
  echo
  "$WEFT_BUILD/bin/weft-run" "$package.pipeline" --inputs "$data" \
    --check "$package.outputs"
}
stage "pipeline: 2 stages on cpu:2, checked against one device" pipeline
