#!/usr/bin/env bash
# tools/build-ocaml-peer.sh: builds the OCaml the benchmarks compare mgc
# with (bench/bench.mk), a stock OCaml 5.3.0 with its native compiler,
# installed into build/peers/ocaml-5.3.0 (make peers runs this).
#
#   tools/build-ocaml-peer.sh [--prefix DIR] [--source TGZ_OR_DIR]
#                             [--jobs N]
#
# The source is npm's ocaml@5.3.0 package (the full source tree), fetched
# once into the cache ports/ocaml/build.sh uses, $MGC_OCAML_CACHE or
# ${XDG_CACHE_HOME:-~/.cache}/mgc, as ocaml-5.3.0.tgz.  The cache's
# ocaml-5.3.0 tree is the port's (bytecode only, reserved header bits):
# this script leaves it alone and builds in a tree of its own, PREFIX-src,
# which it removes once the compiler is installed.  The configuration is
# OCaml's default (native compiler, no reserved header bits, flambda off);
# only ocamldoc, ocamltest and the debugger, which no benchmark uses, are
# left out.  Every step runs under nice -n 19, with N make jobs (default
# 2): 6.5 minutes on 2 cores (measured).  PREFIX/.mgc-peer-built marks a
# finished install; with it there, the script does nothing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
version=5.3.0
prefix="$root/build/peers/ocaml-$version"
source=""
jobs=2

usage() {
  echo "usage: $0 [--prefix DIR] [--source TGZ_OR_DIR] [--jobs N]" >&2
  exit 2
}
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || usage; prefix="$2"; shift 2 ;;
    --source) [ $# -ge 2 ] || usage; source="$2"; shift 2 ;;
    --jobs) [ $# -ge 2 ] || usage; jobs="$2"; shift 2 ;;
    *) usage ;;
  esac
done
case "$prefix" in
  /*) ;;
  *) prefix="$PWD/$prefix" ;;
esac

stamp="$prefix/.mgc-peer-built"
tree="$prefix-src"
logs="$prefix-logs"
cache="${MGC_OCAML_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/mgc}"

log() { echo "ocaml-peer: $*" >&2; }

[ -f "$stamp" ] && exit 0

# The tarball, from the cache or the npm registry.
if [ -z "$source" ]; then
  source="$cache/ocaml-$version.tgz"
  if [ ! -f "$source" ]; then
    mkdir -p "$cache"
    "$root/tools/fetch-ocaml-source.sh" "$version" "$source"
  fi
fi

rm -rf "$tree" "$prefix" "$logs"
mkdir -p "$tree" "$logs"
if [ -d "$source" ]; then
  cp -r "$source/." "$tree"
else
  tar xzf "$source" -C "$tree" --strip-components=1
fi
[ -f "$tree/VERSION" ] || { log "no OCaml tree in $source"; exit 1; }
head -1 "$tree/VERSION" | grep -q "^$version" ||
  { log "$source is not OCaml $version"; exit 1; }

log "configuring, building and installing OCaml $version into $prefix" \
  "(nice -n 19, $jobs jobs, 6.5 minutes on 2 cores)"
start=$SECONDS
step() {
  local name="$1"
  shift
  (cd "$tree" && nice -n 19 "$@") >"$logs/$name.log" 2>&1 ||
    { log "$name failed: see $logs/$name.log"; exit 1; }
}
step configure ./configure --prefix="$prefix" --disable-ocamldoc \
  --disable-ocamltest --disable-debugger-build
step build make -j"$jobs"
step install make install
[ -x "$prefix/bin/ocamlopt" ] ||
  { log "no $prefix/bin/ocamlopt after make install"; exit 1; }
rm -rf "$tree"
touch "$stamp"
log "OCaml $("$prefix/bin/ocamlopt" -version) installed in $prefix" \
  "($((SECONDS - start)) s; logs in $logs)"
