#!/usr/bin/env bash
# Installs what is missing, builds Weft and runs its main job on the bundled
# example model: compile models/example/classifier.onnx as a pipeline of 2
# stages for a cluster of 2 CPU devices of this machine, 2 microbatches per
# batch (the stage table and schedule are printed); compile it for one
# device too and check that one against the bundled reference; run the
# pipeline as 2 MPI ranks and check it against the one-device outputs; then
# stream 200 requests through each and print both throughput lines.
#
#   scripts/demo.sh [MODEL.onnx DATA_DIR [--input-shape=NAME=D0xD1x...]...]
#
# DATA_DIR is an ONNX test-data folder (input_*.pb, and output_*.pb to
# check). --microbatches=2 needs the batch (dimension 0 of every input) to
# be even; with another model, WEFT_DEMO_MICROBATCHES=1 turns it off.
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
pipeline=$package.pipeline
microbatches=${WEFT_DEMO_MICROBATCHES:-2}

compile_pipeline() {
  "$WEFT_BUILD/bin/weftc" "$model" "${shapes[@]}" -o "$pipeline" \
    --cluster cpu:2 --stages=2 --microbatches="$microbatches"
}
compile_one() {
  "$WEFT_BUILD/bin/weftc" "$model" "${shapes[@]}" -o "$package" --quiet
  echo "--- the one-device plan (weftc --emit=plan --report)"
  "$WEFT_BUILD/bin/weftc" "$model" "${shapes[@]}" -o "$package.plan" \
    --emit=plan --report --quiet
  echo
  "$WEFT_BUILD/bin/weft-run" "$package" --inputs "$data"
  if compgen -G "$data/output_*.pb" >/dev/null; then
    echo
    "$WEFT_BUILD/bin/weft-run" "$package" --inputs "$data" --check "$data"
  fi
  "$WEFT_BUILD/bin/weft-run" "$package" --inputs "$data" --quiet \
    --output-dir "$package.outputs"
}
check_pipeline() {
  "$WEFT_BUILD/bin/weft-run" "$pipeline" --inputs "$data" \
    --check "$package.outputs"
}
stream() {
  echo "one device:"
  "$WEFT_BUILD/bin/weft-run" "$package" --inputs "$data" --stream 200 \
    --threads 1 --quiet
  echo "pipeline of 2 stages on cpu:2 (one thread each):"
  "$WEFT_BUILD/bin/weft-run" "$pipeline" --inputs "$data" --stream 200 \
    --threads 1 --quiet --check "$package.outputs"
}
stage "compile $(basename "$model") as 2 stages on cpu:2" compile_pipeline
stage "compile $(basename "$model") for one device, run, check" compile_one
stage "run the pipeline, check it against one device" check_pipeline
stage "stream 200 requests through each" stream
