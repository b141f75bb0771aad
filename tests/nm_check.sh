#!/usr/bin/env bash
# The built libraries export only mgc_ symbols, the shared one has a
# SONAME, and the examples run.  Prints a test summary line.
set -u
b=$1
pass=0 fail=0
check() { if eval "$2"; then pass=$((pass+1)); else echo "FAIL: $1"; fail=$((fail+1)); fi; }
bad=$(nm -D --defined-only "$b/libmgc.so" | awk '$2 ~ /[TDBRVW]/ {print $3}' | grep -v '^mgc_' | grep -vE '^(_init|_fini|_edata|_end|__bss_start)$')
check "libmgc.so exports only mgc_ symbols (got: $bad)" '[ -z "$bad" ]'
bad=$(nm -g --defined-only "$b/libmgc.a" 2>/dev/null | awk 'NF==3 && $2 ~ /[TDBRVW]/ {print $3}' | grep -v '^mgc_' )
check "libmgc.a defines only mgc_ globals (got: $bad)" '[ -z "$bad" ]'
check "libmgc.so has a SONAME" 'readelf -d "$b/libmgc.so" | grep -q "SONAME.*libmgc.so.0"'
for e in "$b"/examples/*; do
  [ -x "$e" ] || continue
  check "example $(basename "$e") runs" '"$e" >/dev/null 2>&1'
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
