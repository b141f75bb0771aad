#!/bin/sh
# ab-cycle.sh REV [PAIRS] [lists | tree DEPTH | scatter]
# Times full major cycles of mgc at git revision REV (side a) against the
# working tree's build/libmgc.a (side b, built by `make`) in one process:
# see tools/ab-cycle.c.  Run from the repository root.
set -e
[ $# -ge 1 ] || { echo "usage: $0 REV [PAIRS] [lists | tree DEPTH | scatter]" >&2; exit 2; }
rev=$1
shift
[ -f build/libmgc.a ] || { echo "$0: build/libmgc.a missing: run make" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
git archive "$rev" | tar -x -C "$tmp"
make -C "$tmp" -s build/libmgc.a >/dev/null
side() { # side NAME LIBMGC INCLUDE
  cc -std=c11 -O2 -fPIC -shared -fvisibility=hidden -I"$3" -DAB_SIDE="$1" \
    tools/ab-cycle.c "$2" -Wl,--exclude-libs,ALL -pthread -lm \
    -o "$tmp/libab_$1.so"
}
side a "$tmp/build/libmgc.a" "$tmp/include"
side b build/libmgc.a include
cc -std=c11 -O2 tools/ab-cycle.c -L"$tmp" -lab_a -lab_b \
  -Wl,-rpath,"$tmp" -o "$tmp/ab-cycle"
"$tmp/ab-cycle" "$@"
