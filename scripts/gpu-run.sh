#!/usr/bin/env bash
# Runs the GPU check on a machine with an NVIDIA GPU and a CUDA installation
# (bash, coreutils, python3; nothing of this repository's build), from the
# archives scripts/gpu-check.sh wrote: prints the GPU and driver, loads cuDNN
# for real (bench/cuda/cudnn_probe.cpp), then for every package checks its
# outputs against the reference (max abs and rel error) and times it
# (--bench; each package is compiled for one batch), and for a GEMM-heavy
# model compares its FLOP/s with cuBLAS's on the same GEMMs, timed in the
# same run (PASS at >= 70%). Runs the CUDA kernel test binaries carried.
# Ends with one table; aims to finish within --budget seconds.
#
# A package or tool that does not start here (another C library, a missing
# shared library) is linked again here from the carried object files and
# static runtime with this machine's C++ compiler; the tools are compiled
# from their carried sources.
#
# Usage: scripts/gpu-run.sh [--bench N] [--warmup K] [--budget S]
#                           [--keep DIR] ARCHIVE.tar.xz...
#
#   scripts/gpu-run.sh build/gpu-check/bundle-1.tar.xz
#   scripts/gpu-run.sh --bench 20 build/gpu-check/bundle-*.tar.xz
#   CUDA_HOME=/opt/cuda scripts/gpu-run.sh bundle-2.tar.xz
#
# Exit codes: 0 all passed, 1 bad options or a failure, 2 only output
# mismatches failed, 3 no usable CUDA device.
set -uo pipefail

usage() { sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
die() { echo "gpu-run: error: $*" >&2; exit 1; }

bench=50
warmup=5
budget=270
keep=
archives=()
while [[ $# -gt 0 ]]; do
  case $1 in
  --help | -h) usage; exit 0 ;;
  --bench | --warmup | --budget)
    [[ $# -ge 2 && $2 =~ ^[0-9]+$ && $2 -le 100000 ]] ||
      die "$1 needs a number"
    case $1 in --bench) bench=$2 ;; --warmup) warmup=$2 ;; *) budget=$2 ;; esac
    shift 2 ;;
  --keep) [[ $# -ge 2 ]] || die "--keep needs a folder"; keep=$2; shift 2 ;;
  -*) die "unknown option '$1' (--help shows the options)" ;;
  *) [[ -f $1 ]] || die "no archive '$1'"; archives+=("$(realpath "$1")"); shift ;;
  esac
done
((${#archives[@]})) || die "no archive given (--help shows the usage)"
((bench >= 1)) || die "--bench must be at least 1"
start=$SECONDS

if [[ -n $keep ]]; then
  mkdir -p "$keep" || die "cannot create $keep"
  work=$(realpath "$keep")
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/weft-gpu-run.XXXXXX") || die "no temp dir"
  trap 'rm -rf "$work"' EXIT
fi
results=$work/results.tsv
: >"$results"
left() { echo $((budget - (SECONDS - start))); }
# record ITEM STATUS MAXABS MAXREL MEDIAN_MS NOTE
record() { printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$results"; }
# Seconds a step may take: at most $1, and what the budget has left.
step_limit() {
  local l
  l=$(left)
  ((l < $1)) && echo "$l" || echo "$1"
}
first_error() { grep -m1 -iE 'error|fail|abort|not found' "$1" | cut -c1-150; }

# --- Unpack ------------------------------------------------------------------
i=0
roots=()
for a in "${archives[@]}"; do
  i=$((i + 1))
  dest=$work/b$i
  mkdir -p "$dest"
  if command -v xz >/dev/null; then
    tar -xJf "$a" -C "$dest" || die "cannot unpack $a"
  else
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' \
      "$a" "$dest" || die "cannot unpack $a (no xz; python3's tarfile failed)"
  fi
  [[ -d $dest/weft-gpu-check/common ]] || die "$a is not a gpu-check.sh archive"
  roots+=("$dest/weft-gpu-check")
done

# --- The machine ---------------------------------------------------------------
echo "== machine"
echo "host: $(uname -srm); $(ldd --version 2>&1 | head -n1)"
if command -v nvidia-smi >/dev/null; then
  nvidia-smi -L 2>&1 | head -n 8
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
    --format=csv,noheader 2>&1 | head -n 8 | sed 's/^/gpu: /'
else
  echo "nvidia-smi: not on PATH"
fi
cuda=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}
if [[ ! -d $cuda ]] && command -v nvcc >/dev/null; then
  cuda=$(dirname "$(dirname "$(realpath "$(command -v nvcc)")")")
fi
echo "CUDA: $cuda ($([[ -x $cuda/bin/nvcc ]] && "$cuda/bin/nvcc" --version | tail -n1 || echo 'no nvcc'))"

# Where the CUDA libraries are: the toolkit, the system, and Python wheels
# (nvidia-cudnn-cu13 and the like), which is where cuDNN often is.
libdirs=()
incdirs=("$cuda/include")
for d in "$cuda/lib64" "$cuda/lib" "$cuda/targets/x86_64-linux/lib" \
  /usr/lib/x86_64-linux-gnu /usr/local/lib /usr/local/nvidia/lib64; do
  [[ -d $d ]] && libdirs+=("$d")
done
while read -r sp; do
  for d in "$sp"/nvidia/*/lib "$sp"/nvidia/cu*/lib; do
    [[ -d $d ]] || continue
    libdirs+=("$d")
    [[ -d ${d%/lib}/include ]] && incdirs+=("${d%/lib}/include")
  done
done < <(python3 -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)
find_lib() { # SONAME -> full path, or nothing
  local d
  for d in "${libdirs[@]}"; do
    [[ -e $d/$1 ]] && { echo "$d/$1"; return 0; }
  done
  return 1
}
# Every shared library the packages and tools need, from the manifests.
needed=$(python3 - "${roots[@]}" <<'EOF'
import glob, json, sys
names = {"libcublas.so.13", "libcublasLt.so.13", "libcudnn.so.9"}
for root in sys.argv[1:]:
    for m in glob.glob(root + "/models/*/*/manifest.json"):
        try:
            names.update(json.load(open(m)).get("runtime_libraries", []))
        except ValueError:
            pass
system = ("libc.", "libm.", "libdl.", "librt.", "libpthread.", "libstdc++.",
          "libgcc_s.", "ld-linux")
print(" ".join(sorted(n for n in names if not n.startswith(system))))
EOF
)
ldpath=
missing=
for so in $needed; do
  if p=$(find_lib "$so"); then
    d=$(dirname "$p")
    [[ :$ldpath: == *":$d:"* ]] || ldpath+="${ldpath:+:}$d"
  else
    missing+=" $so"
  fi
done
export LD_LIBRARY_PATH=$ldpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
echo "libraries: ${needed:-none} from ${ldpath:-the default loader path}"
[[ -n $missing ]] && echo "libraries NOT found:$missing"

cxx=$(command -v c++ || command -v g++ || command -v clang++) || cxx=
cudart=$cuda/lib64/libcudart_static.a
[[ -e $cudart ]] || cudart=$cuda/lib/libcudart_static.a

# starts EXE ARGS...: 0 if the loader could start it (whatever it then says).
starts() {
  local msg rc
  msg=$("$@" 2>&1)
  rc=$?
  if ((rc == 126 || rc == 127)) ||
    grep -qE 'GLIBC_|GLIBCXX_|error while loading shared libraries|cannot open shared object' <<<"$msg"; then
    echo "$msg" | head -n 2 >&2
    return 1
  fi
  return 0
}

# --- The tools ------------------------------------------------------------------
common=${roots[0]}/common
mkdir -p "$work/tools"
tool() { # NAME LIB...: sets $tool_exe (empty when unusable)
  local name=$1 src=$common/tools/src/$1.cpp libs=() so p
  shift
  tool_exe=$common/tools/$name
  if [[ -x $tool_exe ]] && starts "$tool_exe" --version; then
    return
  fi
  echo "$name: the carried binary does not start here; compiling $src"
  tool_exe=
  for so in "$@"; do
    p=$(find_lib "$so") || { echo "$name: no $so here"; return; }
    libs+=("$p")
  done
  local inc=()
  for d in "${incdirs[@]}"; do inc+=(-I"$d"); done
  if [[ -n $cxx && -e $cudart ]]; then
    "$cxx" -O2 -std=c++17 "${inc[@]}" -o "$work/tools/$name" "$src" "$cudart" \
      "${libs[@]}" -ldl -lrt -lpthread >"$work/tools/$name.log" 2>&1 &&
      tool_exe=$work/tools/$name
  elif [[ -x $cuda/bin/nvcc ]]; then
    local ldirs=()
    for p in "${libs[@]}"; do ldirs+=(-L"$(dirname "$p")" -Xlinker "-l:$(basename "$p")"); done
    "$cuda/bin/nvcc" -O2 -std=c++17 "${inc[@]}" -o "$work/tools/$name" "$src" \
      "${ldirs[@]}" >"$work/tools/$name.log" 2>&1 && tool_exe=$work/tools/$name
  fi
  [[ -n $tool_exe ]] || echo "$name: cannot build it here: $(first_error "$work/tools/$name.log")"
}
tool cudnn_probe libcudnn.so.9
probe=$tool_exe
tool cublas_gemm_bench libcublas.so.13 libcublasLt.so.13
gemmbench=$tool_exe

echo "== cuDNN"
if [[ -z $probe ]]; then
  record cudnn-probe FAIL - - - "no usable probe binary"
else
  timeout "$(step_limit 60)" "$probe" >"$work/probe.log" 2>&1
  rc=$?
  cat "$work/probe.log"
  case $rc in
  0) record cudnn-probe PASS - - - "$(grep -o 'cuDNN [0-9.]*' "$work/probe.log" | head -n1) loads and convolves" ;;
  3) record cudnn-probe NODEV - - - "no usable CUDA device" ;;
  124) record cudnn-probe TIMEOUT - - - "" ;;
  *) record cudnn-probe FAIL - - - "exit $rc: $(first_error "$work/probe.log")" ;;
  esac
fi

# --- The packages ----------------------------------------------------------------
# relink PKG RELINK_DIR: links PKG/bin/dev0.here from PKG/obj/dev0.o.
relink() {
  local pkg=$1 rl=$2 libs=() so p
  [[ -e $pkg/obj/dev0.o ]] || { echo "no obj/dev0.o carried"; return 1; }
  [[ -n $cxx ]] || { echo "no C++ compiler here"; return 1; }
  local rt=$cudart
  [[ -e $rt ]] || rt=$rl/libcudart_static.a
  for so in $(python3 -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1])).get("runtime_libraries", [])))' "$pkg/manifest.json"); do
    case $so in libc.* | libm.* | libdl.* | librt.* | libpthread.* | libstdc++.* | libgcc_s.*) continue ;; esac
    p=$(find_lib "$so") || { echo "needs $so, not found here"; return 1; }
    libs+=("$p")
  done
  "$cxx" -o "$pkg/bin/dev0.here" "$pkg/obj/dev0.o" "$rl/libWeftRuntimeCudaMain.a" \
    "$rl/libWeftRuntimeCuda.a" "$rl/libweft_rt.a" "$rt" "${libs[@]}" \
    -ldl -lrt -lpthread -static-libstdc++ -lm >"$pkg/relink.log" 2>&1 ||
    { echo "link failed: $(first_error "$pkg/relink.log")"; return 1; }
}

kv() { grep -m1 "^$1=" "$2" | cut -d= -f2-; }

for root in "${roots[@]}"; do
  while IFS=$'\t' read -r key why; do
    [[ -n $key ]] && record "$key" COMPILE - - - "${why:0:100}"
  done <"$root/compile-failures.txt"
  for pkg in "$root"/models/*/*/; do
    [[ -d $pkg ]] || continue
    pkg=${pkg%/}
    key=$(basename "$pkg")
    if (($(left) < 10)); then
      record "$key" SKIP - - - "time budget spent"
      continue
    fi
    exe=$pkg/bin/dev0
    note=
    if ! starts "$exe" --help; then
      if why=$(relink "$pkg" "$root/common/relink") && starts "$pkg/bin/dev0.here" --help; then
        exe=$pkg/bin/dev0.here
        note="relinked here; "
      else
        record "$key" NOSTART - - - "does not start; relink: ${why:-failed}"
        echo "$key: NOSTART (relink: ${why:-failed})"
        continue
      fi
    fi
    rtol=$(kv rtol "$pkg/case.txt")
    atol=$(kv atol "$pkg/case.txt")
    log=$pkg/run.log
    timeout "$(step_limit 90)" "$exe" --weights "$pkg/weights/dev0.bin" \
      --inputs "$pkg/data" --check "$pkg/data" --rtol "${rtol:-1e-3}" \
      --atol "${atol:-1e-4}" --bench "$bench" --warmup "$warmup" --quiet \
      >"$log" 2>&1
    rc=$?
    abs=$(grep -o 'max abs err [^,]*' "$log" | awk '{print $4}' | sort -g | tail -n1)
    rel=$(grep -o 'max rel err [^,]*' "$log" | awk '{print $4}' | sort -g | tail -n1)
    med=$(grep -o 'median [0-9.]* ms' "$log" | head -n1 | awk '{print $2}')
    case $rc in
    0) status=PASS ;;
    2) status=MISMATCH; note+="$(grep -m1 'check FAILED' "$log")" ;;
    3) status=NODEV; note+="no usable CUDA device" ;;
    124) status=TIMEOUT; note+="over $(step_limit 90) s" ;;
    *) status=FAIL; note+="exit $rc: $(first_error "$log")" ;;
    esac
    gemms=$(kv gemms "$pkg/case.txt")
    if [[ -n $gemms && $gemms != - && -n $med ]]; then
      # The model's FLOP/s against cuBLAS's on the same GEMMs, now.
      flops=$(tr ',' '\n' <<<"$gemms" | awk -Fx '{ s += 2 * $1 * $2 * $3 } END { printf "%.0f", s }')
      m=${gemms%%x*}
      model_tf=$(awk -v f="$flops" -v t="$med" 'BEGIN { printf "%.2f", f / (t * 1e-3) / 1e12 }')
      note+="$model_tf TFLOP/s"
      if [[ -z $gemmbench ]]; then
        note+="; no cuBLAS bench"
      else
        timeout "$(step_limit 60)" "$gemmbench" --shapes "$gemms" --reps "$bench" \
          --warmup "$warmup" --io-bytes "$(kv io_bytes "$pkg/case.txt")" \
          >"$pkg/cublas.log" 2>&1
        brc=$?
        chain=$(grep '^chain:' "$pkg/cublas.log" | awk '{print $3}')
        copies=$(grep '^chain+copies:' "$pkg/cublas.log" | awk '{print $3}')
        if ((brc == 0)) && [[ -n $chain && -n $copies ]]; then
          r_io=$(awk -v a="$copies" -v b="$med" 'BEGIN { printf "%.0f", 100 * a / b }')
          r_k=$(awk -v a="$chain" -v b="$med" 'BEGIN { printf "%.0f", 100 * a / b }')
          cub_tf=$(awk -v f="$flops" -v t="$copies" 'BEGIN { printf "%.2f", f / (t * 1e-3) / 1e12 }')
          note+=" = ${r_io}% of cuBLAS+copies ($cub_tf TFLOP/s; GEMMs alone ${r_k}%)"
          if ((m >= 512)) && [[ $status == PASS ]] && ((r_io < 70)); then
            status=SLOW
            note+="; under 70%"
          fi
        else
          note+="; cuBLAS bench exit $brc: $(first_error "$pkg/cublas.log")"
          [[ $status == PASS ]] && ((m >= 512)) && status=FAIL
        fi
      fi
    fi
    record "$key" "$status" "${abs:--}" "${rel:--}" "${med:--}" "$note"
    echo "$key: $status  max abs err ${abs:--}  median ${med:--} ms  $note"
  done
done

# --- Kernel tests ----------------------------------------------------------------
for t in "${roots[@]/%//tests}"/*; do
  [[ -f $t && -x $t ]] || continue
  name=$(basename "$t")
  if (($(left) < 20)); then
    record "$name" SKIP - - - "time budget spent"
    continue
  fi
  export_path=$(dirname "$t")/lib:$LD_LIBRARY_PATH
  if ! LD_LIBRARY_PATH=$export_path starts "$t" --gtest_list_tests; then
    record "$name" NOSTART - - - "$(LD_LIBRARY_PATH=$export_path "$t" --gtest_list_tests 2>&1 | head -n1 | cut -c1-100)"
    continue
  fi
  LD_LIBRARY_PATH=$export_path timeout "$(step_limit 150)" "$t" --gtest_brief=1 \
    >"$work/$name.log" 2>&1
  rc=$?
  passed=$(grep -o 'PASSED.*] [0-9]* test' "$work/$name.log" | grep -o '[0-9]*' | tail -n1)
  skipped=$(grep -o 'SKIPPED.*] [0-9]* test' "$work/$name.log" | grep -o '[0-9]*' | tail -n1)
  failed=$(grep -o 'FAILED.*] [0-9]* test' "$work/$name.log" | grep -o '[0-9]*' | tail -n1)
  note="${passed:-0} passed, ${skipped:-0} skipped, ${failed:-0} failed"
  case $rc in
  0) record "$name" PASS - - - "$note" ;;
  124) record "$name" TIMEOUT - - - "$note" ;;
  *) record "$name" FAIL - - - "exit $rc: $note"
    grep -E '^\[  FAILED  \]' "$work/$name.log" | head -n 10 ;;
  esac
done

# --- Summary -----------------------------------------------------------------------
echo
echo "== summary ($((SECONDS - start)) s)"
printf '%-44s %-8s %-10s %-10s %-10s %s\n' ITEM STATUS "MAX ABS" "MAX REL" "MEDIAN ms" NOTES
while IFS=$'\t' read -r item status abs rel med note; do
  printf '%-44s %-8s %-10s %-10s %-10s %s\n' "$item" "$status" "$abs" "$rel" "$med" "$note"
done <"$results"
bad=$(cut -f2 "$results" | grep -cv '^PASS$')
nodev=$(cut -f2 "$results" | grep -c '^NODEV$')
mismatch=$(cut -f2 "$results" | grep -c '^MISMATCH$')
echo "gpu-run: $(grep -c . "$results") items, $bad not passed"
((bad == 0)) && exit 0
((nodev > 0)) && { echo "gpu-run: no usable CUDA device"; exit 3; }
((mismatch == bad)) && exit 2
exit 1
