#!/usr/bin/env bash
# Prepares the GPU check: compiles CUDA packages of the in-repo models (those
# of test/E2E/make_models.py, a GPT of make_gpt.py, models/example and the
# GEMM-heavy MLP of test/E2E/make_gemm_heavy.py) and of every model folder
# under each MODELS_DIR, one package per test-data folder (its input shapes
# fixed with --input-shape), and packs them with their test data, their
# object files and the static runtime (to relink on the GPU machine if the
# packages do not start there), the cuBLAS GEMM bench, the cuDNN probe, the
# CUDA kernel test binaries and scripts/gpu-run.sh into xz archives of at
# most --bundle-mib MiB each. A model too large to share an archive gets its
# own. Prints the archives and the command to run on the GPU machine:
#
#   scripts/gpu-run.sh build/gpu-check/bundle-1.tar.xz
#
# Usage: scripts/gpu-check.sh [--out DIR] [--gpu-arch LIST] [--bundle-mib N]
#                             [--filter REGEX] [--no-in-repo] [MODELS_DIR...]
#
#   scripts/gpu-check.sh                         # in-repo models only
#   scripts/gpu-check.sh ../shared/models        # and those of the folder
#   scripts/gpu-check.sh --filter 'gemm|resnet' ../shared/models
#   WEFT_BUILD=build-x scripts/gpu-check.sh      # another build's weftc
#
# A model folder holds one .onnx file and test-data folders (input_<i>.pb,
# output_<i>.pb); an optional meta.json may give "rtol", "atol" and
# "gemms" ([K, N] per MatMul layer, M being the batch: gpu-run.sh then
# compares the model's FLOP/s with cuBLAS's). A model that weftc cannot
# compile is listed in the archive and fails there as "compile".
# Builds nothing but the two small CUDA tools when the build has none.
# Exit codes: 0 archives written, 1 bad options or inputs, 70 a step failed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
py=/usr/bin/python3

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "gpu-check: error: $*" >&2; exit 1; }

out=$WEFT_BUILD/gpu-check
arch=
bundle_mib=60
filter=
in_repo=1
dirs=()
while [[ $# -gt 0 ]]; do
  case $1 in
  --help | -h) usage; exit 0 ;;
  --out) [[ $# -ge 2 ]] || die "--out needs a folder"; out=$2; shift 2 ;;
  --gpu-arch) [[ $# -ge 2 ]] || die "--gpu-arch needs a list"; arch=$2; shift 2 ;;
  --bundle-mib)
    [[ $# -ge 2 && $2 =~ ^[0-9]+$ && $2 -ge 8 && $2 -le 4096 ]] ||
      die "--bundle-mib needs a number of MiB in [8, 4096]"
    bundle_mib=$2; shift 2 ;;
  --filter) [[ $# -ge 2 ]] || die "--filter needs a regex"; filter=$2; shift 2 ;;
  --no-in-repo) in_repo=0; shift ;;
  -*) die "unknown option '$1' (--help shows the options)" ;;
  *) [[ -d $1 ]] || die "models folder '$1' does not exist"
    dirs+=("$(cd "$1" && pwd)"); shift ;;
  esac
done

# --- What is needed from the build ------------------------------------------
weftc=$WEFT_BUILD/bin/weftc
libs=("$WEFT_BUILD/runtime/cuda/libWeftRuntimeCudaMain.a"
  "$WEFT_BUILD/runtime/cuda/libWeftRuntimeCuda.a"
  "$WEFT_BUILD/runtime/libweft_rt.a")
for f in "$weftc" "${libs[@]}"; do
  [[ -e $f ]] && continue
  die "no $f: build weftc and the CUDA runtime first, e.g.
  cmake -S $WEFT_ROOT -B $WEFT_BUILD -G Ninja && ninja -C $WEFT_BUILD weftc WeftRuntimeCudaMain"
done
"$py" -c 'import onnx, numpy' 2>/dev/null ||
  die "$py lacks onnx or numpy (scripts/install-deps.sh)"
cuda=${CUDA_HOME:-/usr/local/cuda}
cudalib=
for d in "$cuda/lib64" "$cuda/lib"; do
  [[ -e $d/libcudart_static.a ]] && { cudalib=$d; break; }
done
[[ -n $cudalib ]] || die "no libcudart_static.a under $cuda (set CUDA_HOME)"
if [[ -n $filter ]]; then
  rc=0
  echo x | grep -Eq -- "$filter" 2>/dev/null || rc=$?
  ((rc <= 1)) || die "--filter '$filter' is not an extended regex"
fi

start=$SECONDS
rm -rf "$out/stage" "$out/src" "$out"/bundle-*.tar.xz "$out/logs"
mkdir -p "$out/stage" "$out/src" "$out/logs"
common=$out/stage/common
tests=$out/stage/tests
mkdir -p "$common/tools/src" "$common/relink" "$tests/lib"

# --- The two CUDA tools: the build's, else compiled here ---------------------
tool() { # TARGET NAME SOURCE LIBS...
  local target=$1 name=$2 src=$WEFT_ROOT/bench/cuda/$3
  shift 3
  cp "$src" "$common/tools/src/"
  if [[ -x $WEFT_BUILD/bin/$target ]]; then
    cp "$WEFT_BUILD/bin/$target" "$common/tools/$name"
    return
  fi
  local cxx
  cxx=$(command -v clang++-22 || command -v g++ || command -v c++) ||
    die "no C++ compiler to build $name"
  "$cxx" -O2 -std=c++17 -I"$cuda/include" -o "$common/tools/$name" "$src" \
    "$cudalib/libcudart_static.a" -L"$cudalib" "$@" -ldl -lrt -lpthread \
    -static-libstdc++ >"$out/logs/$name.log" 2>&1 ||
    { cat "$out/logs/$name.log" >&2; die "cannot build $name from $src"; }
}
tool weft-cublas-gemm-bench cublas_gemm_bench cublas_gemm_bench.cpp -lcublas
tool weft-cudnn-probe cudnn_probe cudnn_probe.cpp -lcudnn
cp "${libs[@]}" "$cudalib/libcudart_static.a" "$common/relink/"
cp "$WEFT_ROOT/scripts/gpu-run.sh" "$out/stage/gpu-run.sh"

# The kernel tests (gtest) and the shared libraries they need that are not
# CUDA's or the C library's: the GPU machine has none of this image's.
for t in "$WEFT_BUILD"/test/Runtime/cuda/Weft*Tests; do
  [[ -x $t && $(basename "$t") != *Nccl* ]] || continue
  cp "$t" "$tests/"
  ldd "$t" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' |
    while read -r so path; do
      case $so in
      libc.so* | libm.so* | libdl.so* | librt.so* | libpthread.so* | \
        libgcc_s.so* | libstdc++.so* | ld-linux*) continue ;;
      esac
      [[ $path == "$cuda"* || $path == */cuda* ]] && continue
      [[ -e $tests/lib/$so ]] || cp -L "$path" "$tests/lib/$so"
    done
done

# --- The models --------------------------------------------------------------
# Each model is a folder (LABEL<TAB>FOLDER in $out/models.tsv).
: >"$out/models.tsv"
if ((in_repo)); then
  stage "generate in-repo models" bash -c "
    set -e
    $py '$WEFT_ROOT/test/E2E/make_models.py' '$out/src/e2e' >/dev/null
    for b in 1 4; do
      $py '$WEFT_ROOT/test/E2E/make_gpt.py' --out '$out/src/gpt/model.onnx' \
        --layers 2 --hidden 64 --heads 4 --seq 16 --vocab 100 --batch \$b \
        --dynamic-batch --test-data '$out/src/gpt/b'\$b'_s16' >/dev/null
    done
    $py '$WEFT_ROOT/test/E2E/make_gemm_heavy.py' '$out/src/gemm_heavy' >/dev/null"
  for m in mlp cnn transformer transformer_op14; do
    printf 'e2e\t%s\n' "$out/src/e2e/$m" >>"$out/models.tsv"
  done
  printf 'e2e\t%s\n' "$out/src/gpt" "$WEFT_ROOT/models/example" \
    "$out/src/gemm_heavy" >>"$out/models.tsv"
fi
for d in "${dirs[@]}"; do
  label=$(basename "$d")
  for m in "$d"/*/; do
    printf '%s\t%s\n' "$label" "${m%/}" >>"$out/models.tsv"
  done
done

# One package per test-data folder: KEY MODEL ONNX DATA SHAPES RTOL ATOL
# IN_BYTES OUT_BYTES GEMMS (tab-separated; SHAPES space-separated
# --input-shape values, GEMMS comma-separated MxNxK or '-').
"$py" - "$out/models.tsv" "$filter" >"$out/cases.tsv" <<'EOF'
import json, os, re, sys
import onnx
from onnx import numpy_helper

models_tsv, pattern = sys.argv[1], sys.argv[2]
rows, seen = [], set()
for line in open(models_tsv):
    label, folder = line.rstrip("\n").split("\t")
    name = os.path.basename(folder)
    key = label + "." + name
    if pattern and not re.search(pattern, key):
        continue
    if key in seen:
        sys.exit("gpu-check: two model folders named %s" % key)
    seen.add(key)
    onnxs = sorted(f for f in os.listdir(folder) if f.endswith(".onnx"))
    if len(onnxs) != 1:
        print("gpu-check: skipped %s: %d .onnx files, expected one" %
              (folder, len(onnxs)), file=sys.stderr)
        continue
    meta = {}
    if os.path.exists(os.path.join(folder, "meta.json")):
        try:
            meta = json.load(open(os.path.join(folder, "meta.json")))
        except ValueError as err:
            sys.exit("gpu-check: %s/meta.json: %s" % (folder, err))
    onnx_path = os.path.join(folder, onnxs[0])
    graph = onnx.load(onnx_path, load_external_data=False).graph
    inits = {t.name for t in graph.initializer}
    inputs = [i.name for i in graph.input if i.name not in inits]
    sets = sorted(d for d in os.listdir(folder)
                  if os.path.exists(os.path.join(folder, d, "input_0.pb")))
    if not sets:
        print("gpu-check: skipped %s: no test-data folder" % folder,
              file=sys.stderr)
    for data in sets:
        path = os.path.join(folder, data)
        shapes, in_bytes, out_bytes, batch = [], 0, 0, None
        for i in range(len(inputs)):
            f = os.path.join(path, "input_%d.pb" % i)
            if not os.path.exists(f):
                sys.exit("gpu-check: %s has no input_%d.pb for input '%s'" %
                         (path, i, inputs[i]))
            t = numpy_helper.to_array(onnx.load_tensor(f))
            name = inputs[i]
            shapes.append("%s=%s" % (name, "x".join(map(str, t.shape)) or "1"))
            in_bytes += t.nbytes
            if batch is None and t.ndim:
                batch = t.shape[0]
        i = 0
        while os.path.exists(os.path.join(path, "output_%d.pb" % i)):
            out_bytes += numpy_helper.to_array(onnx.load_tensor(
                os.path.join(path, "output_%d.pb" % i))).nbytes
            i += 1
        gemms = "-"
        if meta.get("gemms") and batch:
            gemms = ",".join("%dx%dx%d" % (batch, n, k)
                             for k, n in meta["gemms"])
        rows.append([key + "." + data, key, onnx_path, path, " ".join(shapes),
                     str(meta.get("rtol", 1e-3)), str(meta.get("atol", 1e-4)),
                     str(in_bytes), str(out_bytes), gemms])
for r in rows:
    print("\t".join(r))
EOF
[[ -s $out/cases.tsv ]] || die "no model to compile (check --filter and the folders)"

# --- Compile -----------------------------------------------------------------
compile_start=$SECONDS
arch_flag=()
[[ -n $arch ]] && arch_flag=(--gpu-arch="$arch")
: >"$out/stage/compile-failures.txt"
ncase=0
nfail=0
while IFS=$'\t' read -r key model onnx data shapes rtol atol inb outb gemms; do
  ncase=$((ncase + 1))
  pkg=$out/stage/models/$model/$key
  mkdir -p "$pkg"
  shape_flags=()
  for s in $shapes; do shape_flags+=(--input-shape="$s"); done
  log=$out/logs/$key.log
  if "$weftc" "$onnx" -o "$pkg" --target=cuda "${arch_flag[@]}" \
    "${shape_flags[@]}" --quiet >"$log" 2>&1 &&
    mkdir -p "$pkg/obj" &&
    "$weftc" "$onnx" -o "$pkg/obj/dev0.o" --emit=obj --target=cuda \
      "${arch_flag[@]}" "${shape_flags[@]}" --quiet >>"$log" 2>&1; then
    mkdir -p "$pkg/data"
    cp "$data"/*.pb "$pkg/data/"
    {
      echo "model=$model"
      echo "data=$(basename "$data")"
      echo "rtol=$rtol"
      echo "atol=$atol"
      echo "io_bytes=$inb,$outb"
      echo "gemms=$gemms"
    } >"$pkg/case.txt"
    echo "  compiled $key"
  else
    nfail=$((nfail + 1))
    rm -rf "$pkg"
    rmdir "$out/stage/models/$model" 2>/dev/null || true
    why=$(grep -m1 -i 'error' "$log" || head -n1 "$log")
    printf '%s\t%s\n' "$key" "${why:-weftc failed}" >>"$out/stage/compile-failures.txt"
    echo "  COMPILE FAILED $key: ${why:-weftc failed} (log: $log)" >&2
  fi
done <"$out/cases.tsv"
echo "compiled $((ncase - nfail)) of $ncase packages in $((SECONDS - compile_start)) s"

# --- Bundles -----------------------------------------------------------------
# Identical files (the weights of one model at two batches) become hard
# links, which tar stores once.
dedup() {
  find "$1" -type f -size +64k -print0 | xargs -0r sha256sum | sort |
    awk '{ if ($1 == prev) print first "\t" $2; else { prev = $1; first = $2 } }' |
    while IFS=$'\t' read -r keep dup; do ln -f "$keep" "$dup"; done
}
[[ -d $out/stage/models ]] && dedup "$out/stage/models"

# Rough compressed size of a model folder: its distinct large files at the
# ratio xz gets on their first MiB, the rest (binaries mostly alike) at 1/4.
estimate() {
  find "$1" -type f -printf '%i %s %p\n' | sort -u -k1,1 |
    while read -r _ size path; do
      if ((size > 4 << 20)) && [[ $path == */weights/* ]]; then
        c=$(head -c 1048576 "$path" | xz -1 -T1 | wc -c)
        echo $((size * c / 1048576))
      else
        echo $((size / 4))
      fi
    done | awk '{ s += $1 } END { print s + 0 }'
}

limit=$((bundle_mib << 20))
common_est=$(estimate "$common")
groups=()
current=
current_est=$((common_est + $(estimate "$tests")))
for m in "$out"/stage/models/*/; do
  [[ -d $m ]] || continue
  name=$(basename "$m")
  est=$(estimate "$m")
  if [[ -n $current ]] && ((current_est + est > limit * 9 / 10)); then
    groups+=("$current")
    current=
    current_est=$common_est
  fi
  current+="${current:+ }$name"
  current_est=$((current_est + est))
done
[[ -n $current ]] && groups+=("$current")
[[ ${#groups[@]} -gt 0 ]] || groups=("")

# Packs the models of $1 (space-separated) with the common files into $2,
# and the kernel tests when $3 is 1.
# Small files first and weights last, so that the binaries, which are mostly
# alike, lie within xz's window of each other.
pack() {
  local models=$1 archive=$2 with_tests=$3 list
  list=$(mktemp)
  (
    cd "$out/stage"
    echo gpu-run.sh
    echo compile-failures.txt
    find common -type f
    ((with_tests)) && find tests -type f
    for m in $models; do
      find "models/$m" -type f ! -path '*/weights/*'
    done | sort
    for m in $models; do find "models/$m" -type f -path '*/weights/*'; done
  ) >"$list"
  tar -C "$out/stage" --owner=0 --group=0 --transform 's,^,weft-gpu-check/,' \
    -cf - --no-recursion -T "$list" |
    xz -6 -T1 --lzma2=preset=6,dict=64MiB >"$archive"
  rm -f "$list"
}

echo "==> packing ${#groups[@]} archive(s) (xz; about 1 MB/s of weights)"
n=0
sent=()
while [[ ${#groups[@]} -gt 0 ]]; do
  g=${groups[0]}
  groups=("${groups[@]:1}")
  n=$((n + 1))
  archive=$out/bundle-$n.tar.xz
  pack "$g" "$archive" $((n == 1))
  size=$(stat -c %s "$archive")
  read -ra members <<<"$g"
  if ((size > limit && ${#members[@]} > 1)); then
    # The estimate was off: split the group and pack each half again.
    half=$((${#members[@]} / 2))
    groups=("${members[*]:0:half}" "${members[*]:half}" "${groups[@]}")
    rm -f "$archive"
    n=$((n - 1))
    continue
  fi
  if ((size > limit)); then
    echo "gpu-check: warning: $archive is $((size >> 20)) MiB, over" \
      "--bundle-mib $bundle_mib, with one model ($g) in it" >&2
  fi
  printf '  %-28s %6.1f MiB  %s\n' "bundle-$n.tar.xz" \
    "$(echo "$size / 1048576" | bc -l)" "${g:-(tools and tests only)}"
  sent+=("$archive")
done

echo
echo "gpu-check: $((ncase - nfail)) packages ($nfail failed to compile) in" \
  "${#sent[@]} archive(s), $((SECONDS - start)) s"
echo "Send each archive in its own call (run's carry) and run there:"
for a in "${sent[@]}"; do
  rel=${a#"$WEFT_ROOT"/}
  echo "  carry=[\"$rel\"]  command: bash scripts/gpu-run.sh $rel"
done
exit 0
