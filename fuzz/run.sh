#!/usr/bin/env bash
# fuzz/run.sh: runs the libFuzzer targets built by the Makefile in
# BUILD/fuzz (one per fuzz/fuzz_*.c; seed corpus in fuzz/corpus/NAME).
#   fuzz/run.sh probe CC              exit 0 when CC links -fsanitize=fuzzer
#                                     programs (with ASan+UBSan)
#   fuzz/run.sh regress BUILD [CC]    each target once over every file of its
#                                     corpus (no fuzzing); one check per file;
#                                     prints "N passed, M failed"; skipped with
#                                     a note (0 passed, 0 failed) when CC
#                                     cannot build the targets
#   fuzz/run.sh fuzz BUILD SECONDS    each target SECONDS seconds: new inputs
#                                     in BUILD/fuzz/work/NAME (kept between
#                                     runs), fuzz/corpus/NAME read-only seeds,
#                                     a crash's input in
#                                     BUILD/fuzz/artifacts/NAME/; exit 1 if any
#                                     target failed
# The logs are in BUILD/fuzz/logs.
set -u
cd "$(dirname "$0")/.." || exit 1
mode=${1:-}

probe() {
  local cc=$1 dir
  command -v "$cc" >/dev/null 2>&1 || return 1
  dir=$(mktemp -d "${TMPDIR:-/tmp}/mgc-fuzz-probe.XXXXXX") || return 1
  printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' >"$dir/p.c"
  "$cc" -fsanitize=fuzzer,address,undefined "$dir/p.c" -o "$dir/p" >/dev/null 2>&1
  local rc=$?
  rm -rf "$dir"
  return $rc
}

targets() {
  local f
  for f in fuzz/fuzz_*.c; do
    f=${f##*/}
    echo "${f%.c}"
  done
}

case $mode in
probe)
  probe "${2:-clang}"
  ;;
regress)
  build=$2 cc=${3:-clang}
  if ! probe "$cc"; then
    echo "note: $cc cannot link -fsanitize=fuzzer programs (Debian: clang," \
      "libclang-rt-dev): fuzz regression skipped"
    echo "0 passed, 0 failed"
    exit 0
  fi
  logs=$build/fuzz/logs
  mkdir -p "$logs"
  pass=0 fail=0
  for t in $(targets); do
    bin=$build/fuzz/$t
    files=(fuzz/corpus/"$t"/*)
    if [ ! -f "${files[0]}" ]; then
      echo "FAIL: $t has no seed corpus (fuzz/corpus/$t/)"
      fail=$((fail + 1))
      continue
    fi
    if [ ! -x "$bin" ]; then
      echo "FAIL: $bin not built (make fuzz-build)"
      fail=$((fail + 1))
      continue
    fi
    # Every file once, in one process (files given by name: no fuzzing).
    timeout "${FUZZ_REGRESS_TIMEOUT:-300}" "$bin" -detect_leaks=1 \
      "${files[@]}" >"$logs/regress-$t.log" 2>&1
    rc=$?
    ok=$(grep -c '^Executed ' "$logs/regress-$t.log")
    pass=$((pass + ok))
    if [ $rc -ne 0 ] || [ "$ok" -ne ${#files[@]} ]; then
      last=$(grep '^Running: ' "$logs/regress-$t.log" | tail -1)
      echo "FAIL: $t (exit $rc) on ${last#Running: }; log $logs/regress-$t.log:"
      tail -n 30 "$logs/regress-$t.log"
      fail=$((fail + 1))
    fi
  done
  echo "$pass passed, $fail failed"
  [ $fail -eq 0 ]
  ;;
fuzz)
  build=$2 secs=${3:-60}
  status=0
  for t in $(targets); do
    bin=$build/fuzz/$t
    work=$build/fuzz/work/$t
    art=$build/fuzz/artifacts/$t
    log=$build/fuzz/logs/fuzz-$t.log
    mkdir -p "$work" "$art" "$(dirname "$log")"
    extra=()
    # The parser names every bad key on stderr: keep the log small.
    [ "$t" = fuzz_params ] && extra=(-close_fd_mask=2)
    echo "== $t: $secs s (log $log)"
    "$bin" -max_total_time="$secs" -timeout=60 -rss_limit_mb=4096 \
      -max_len=4096 -print_final_stats=1 -artifact_prefix="$art/" \
      "${extra[@]}" "$work" "fuzz/corpus/$t" >"$log" 2>&1
    rc=$?
    grep -E '^(stat::number_of_executed_units|stat::peak_rss_mb)' "$log" |
      sed 's/^/   /'
    if [ $rc -ne 0 ]; then
      echo "FAIL: $t crashed (exit $rc); input in $art/:"
      ls "$art"
      tail -n 40 "$log"
      status=1
    fi
  done
  exit $status
  ;;
*)
  echo "usage: fuzz/run.sh probe CC | regress BUILD [CC] | fuzz BUILD SECONDS" >&2
  exit 2
  ;;
esac
