# Shared by the scripts in this folder: where things are, how to time a stage
# and how to configure and build. Source it; do not run it.

WEFT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
WEFT_BUILD=${WEFT_BUILD:-$WEFT_ROOT/build}
# ccache keys on paths relative to the checkout, so a fresh clone elsewhere
# reuses earlier compilations.
export CCACHE_BASEDIR=$WEFT_ROOT

# stage NAME COMMAND...: runs COMMAND and prints how long it took.
stage() {
  local name=$1
  shift
  local start=$SECONDS
  echo "==> $name"
  if "$@"; then
    echo "==> $name: done in $((SECONDS - start)) s"
  else
    local rc=$?
    echo "==> $name: FAILED (exit $rc) after $((SECONDS - start)) s" >&2
    return $rc
  fi
}

weft_configure() {
  cmake -S "$WEFT_ROOT" -B "$WEFT_BUILD" -G Ninja "$@" >"$WEFT_BUILD.configure.log" 2>&1 ||
    { cat "$WEFT_BUILD.configure.log" >&2; return 1; }
}

weft_build() {
  ninja -C "$WEFT_BUILD" "$@"
}
