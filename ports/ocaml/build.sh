#!/usr/bin/env bash
# ports/ocaml/build.sh: builds ocamlrun-mgc, OCaml 5.3.0's bytecode runtime
# with its memory manager replaced by mgc (the files of glue/).
#
#   ports/ocaml/build.sh [--source TGZ_OR_DIR] [--out DIR] [--print-tree]
#
# 1. The OCaml tree: fetched once (`npm pack ocaml@5.3.0`: the full source
#    tree and testsuite, from the npm registry) into a cache outside the
#    repository, $MGC_OCAML_CACHE or ${XDG_CACHE_HOME:-~/.cache}/mgc, then
#    configured (8 reserved header bits, so that OCaml's header layout is
#    mgc's; bytecode only) and built there once: its stock runtime/ocamlrun,
#    ocamlc and stdlib serve the test runner as the reference.  A machine
#    that built it once does not build it again (a stamp file says so).
# 2. ocamlrun-mgc: the stock tree's runtime objects of every file the glue
#    does not replace (the glue replaces whole files and no header, so
#    those objects are the stock build's), the glue files compiled with
#    the tree's flags, and build/libmgc.a (the caller builds it: make
#    ocaml-port does).  Written to build/ocaml-port/ocamlrun-mgc.
# --print-tree prints the tree's directory (after building it if needed).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
version=5.3.0
source=""
out="$root/build/ocaml-port"
print_tree=0
while [ $# -gt 0 ]; do
  case "$1" in
    --source) source="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --print-tree) print_tree=1; shift ;;
    *) echo "usage: $0 [--source TGZ_OR_DIR] [--out DIR] [--print-tree]" >&2
       exit 2 ;;
  esac
done

cache="${MGC_OCAML_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/mgc}"
tree="$cache/ocaml-$version"
stamp="$tree/.mgc-built"
jobs="$(nproc 2>/dev/null || echo 2)"

log() { echo "ocaml-port: $*" >&2; }

# The glue's file names: the OCaml runtime files it replaces.
replaced="minor_gc major_gc shared_heap gc_stats globroots memory custom
  gc_ctrl domain weak finalise"

build_tree() {
  mkdir -p "$cache"
  local tmp="$cache/tmp.$$"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  if [ -z "$source" ]; then
    "$root/tools/fetch-ocaml-source.sh" "$version" "$tmp/ocaml-$version.tgz"
    source="$tmp/ocaml-$version.tgz"
  fi
  if [ -d "$source" ]; then
    cp -r "$source" "$tmp/package"
  else
    tar xzf "$source" -C "$tmp"
  fi
  [ -f "$tmp/package/VERSION" ] || { log "no OCaml tree in $source"; exit 1; }
  head -1 "$tmp/package/VERSION" | grep -q "^$version" ||
    { log "$source is not OCaml $version"; exit 1; }
  rm -rf "$tree"
  mv "$tmp/package" "$tree"
  rm -rf "$tmp"
  log "configuring and building OCaml $version in $tree (a few minutes)"
  (cd "$tree" &&
     ./configure --enable-reserved-header-bits=8 --disable-native-compiler \
       --disable-ocamldoc --disable-ocamltest --disable-debugger-build \
       --prefix="$tree/_install" >"$tree/mgc-configure.log" 2>&1 &&
     make -j"$jobs" >"$tree/mgc-build.log" 2>&1) ||
    { log "OCaml build failed: see $tree/mgc-configure.log, mgc-build.log";
      exit 1; }
  touch "$stamp"
}

[ -f "$stamp" ] || build_tree
if [ "$print_tree" = 1 ]; then
  echo "$tree"
  exit 0
fi

[ -f "$root/build/libmgc.a" ] ||
  { log "build/libmgc.a missing: run make first"; exit 1; }

mkdir -p "$out/obj"
rt="$tree/runtime"
# The tree's own compiler flags for bytecode runtime objects.
ocflags="$(sed -n 's/^OC_CFLAGS *= *//p' "$tree/Makefile.build_config")"
cc="$(sed -n 's/^CC=//p' "$tree/Makefile.config")"
cppflags="-I $rt -D_FILE_OFFSET_BITS=64 -DCAMLDLLIMPORT= -DIN_CAML_RUNTIME"

objs=()
for o in "$rt"/*.b.o; do
  base="$(basename "$o" .b.o)"
  case " $(echo $replaced) " in *" $base "*) continue ;; esac
  case "$base" in instrtrace|unix_non_shared) continue ;; esac
  objs+=("$o")
done
for c in "$here"/glue/*.c; do
  o="$out/obj/$(basename "$c" .c).o"
  if [ ! -f "$o" ] || [ "$c" -nt "$o" ] || [ "$here/glue/port.h" -nt "$o" ] ||
     [ "$root/include/mgc.h" -nt "$o" ]; then
    $cc $ocflags -Werror -pthread $cppflags -I "$root/include" \
      ${PORT_EXTRA_CFLAGS:-} -c "$c" -o "$o"
  fi
  objs+=("$o")
done
# Effects and statmemprof are not supported in milestone 1: the primitives
# that start them are wrapped to raise Failure (glue/unsupported.c).
$cc -Wl,-E -o "$out/ocamlrun-mgc" "$rt/prims.o" "${objs[@]}" \
  -Wl,--wrap=caml_alloc_stack -Wl,--wrap=caml_memprof_start \
  ${PORT_EXTRA_OBJS:-} "$root/build/libmgc.a" -lm -lpthread
ln -sf "$tree" "$out/tree"
log "built $out/ocamlrun-mgc (OCaml tree: $tree)"
