#!/usr/bin/env bash
# Installs the Debian packages Weft needs to build and test, skipping those
# already present. Idempotent: a second run installs nothing.
#
#   scripts/install-deps.sh            # build + test dependencies
#   WEFT_DEPS_EXTRA="pkg ..." scripts/install-deps.sh   # add more packages
set -euo pipefail

packages=(
  # Compiler infrastructure: MLIR/LLVM 22 (libMLIR.so, tblgen, lit, FileCheck).
  libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22 lld-22
  # ONNX protobuf schema, parser, checker and shape inference.
  libprotobuf-dev protobuf-compiler libonnx-dev
  # Build and test tools.
  cmake ninja-build g++ libgtest-dev ccache
  # Test models are generated with Debian's python3 + onnx; conformance data.
  python3 python3-onnx python3-numpy libonnx-testdata
  # libFuzzer for the importer's fuzz target.
  libclang-rt-22-dev
  # CPU runtime kernels: OpenBLAS (OpenMP build, so one OpenMP runtime owns
  # every thread) and oneDNN.
  libopenblas-openmp-dev libdnnl-dev
  # Independent reference outputs for the end-to-end tests.
  python3-torch
  # The CPU benchmark's MobileNetV2 (bench/models/make_bench_models.py).
  python3-torchvision
  # Multi-device: the sharding ILP (COIN-OR CBC) and the MPI runtime.
  coinor-libcbc-dev libopenmpi-dev openmpi-bin
  # rsvg-convert: the TimelineRender ctest renders simulated timeline SVGs
  # to PNG with it (skipped without it).
  librsvg2-bin
)
if [[ -n "${WEFT_DEPS_EXTRA:-}" ]]; then
  read -r -a extra <<<"$WEFT_DEPS_EXTRA"
  packages+=("${extra[@]}")
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install-deps: all ${#packages[@]} packages already installed"
  exit 0
fi

echo "install-deps: installing ${#missing[@]} package(s): ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "install-deps: error: need root (or sudo) to install: ${missing[*]}" >&2
    exit 1
  fi
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps: error: apt-get not found; Weft targets Debian 12 (bookworm)." >&2
  echo "install-deps: install these packages by hand: ${missing[*]}" >&2
  exit 1
fi

# LLVM/MLIR 22 come from bookworm-security; make sure that suite is enabled.
$SUDO apt-get update -q || {
  echo "install-deps: error: 'apt-get update' failed (no network or bad sources?)" >&2
  exit 1
}
if ! DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=600 \
    install -y -q --no-install-recommends "${missing[@]}"; then
  echo "install-deps: error: apt-get could not install: ${missing[*]}" >&2
  echo "install-deps: check that bookworm and bookworm-security are in your apt sources" >&2
  exit 1
fi
echo "install-deps: done"
