#!/usr/bin/env bash
# Imports the development models of ../shared/models (not part of a user's
# clone, so this is a check for developers, not a test) with the input shapes
# of their test_data_set_0, canonicalizes them and prints import time, IR size
# and what is left after canonicalization.
#
#   scripts/check-shared-models.sh [MODELS_DIR]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
models=${1:-$WEFT_ROOT/../shared/models}
bin=$WEFT_BUILD/bin
out=$WEFT_BUILD/shared-models
mkdir -p "$out"
[[ -d $models ]] || { echo "no models at $models" >&2; exit 1; }

check() {
  local name=$1
  shift
  local start=$(date +%s.%N)
  "$bin/weft-translate" --import-onnx "$models/$name/model.onnx" "$@" \
    -o "$out/$name.mlir"
  local end=$(date +%s.%N)
  printf '%s: imported in %.2f s, %d bytes of IR\n' "$name" \
    "$(echo "$end - $start" | bc)" "$(stat -c %s "$out/$name.mlir")"
  "$bin/weft-opt" "$out/$name.mlir" --canonicalize --weft-print-summary \
    -o "$out/$name.canonical.mlir"
  local left
  left=$(grep -cE 'weft\.(shape|size|constant_of_shape|range) ' \
    "$out/$name.canonical.mlir" || true)
  echo "  shape ops left after --canonicalize: $left"
}

check mlp --input-shape=input=1x784
check resnet18 --input-shape=input=1x3x224x224
check bert_tiny --input-shape=input_ids=1x128 \
  --input-shape=attention_mask=1x128 --input-shape=token_type_ids=1x128
