#!/usr/bin/env bash
# ports/ocaml/test.sh: make ocaml-port-test.  Runs the test runner
# (run-tests.sh) over OCaml's testsuite twice with ocamlrun-mgc: plainly,
# then under mgc's torture mode (a minor collection every 1000
# allocations, the heap verified after every collection), each time
# against the stock ocamlrun of the same tree and with the compiler's
# output compared byte for byte; then the port's own regression tests
# (tests/), plainly, with V=1 and under torture.  The last line sums all:
# `N passed, M failed`; the exit status is 0 only when nothing failed.
#
#   ports/ocaml/test.sh [--jobs N] [--torture MGC_PARAMS | --no-torture]
#                       [--torture-timeout S] [--torture-exclude REGEX]
#                       [--torture-sample K] [--only REGEX]
# --torture-sample K runs the torture pass on every K-th attempted test only
# (in path order, the first included): CI's short version of the pass.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
jobs=2
torture="t=1000,V=1"
torture_timeout=900
# Under torture (a full heap verification after every collection) two
# programs would run for hours: each keeps a heap of 7 to 10 million words
# (as on the stock runtime) through 11,000 to 13,000 minor collections.
torture_sample=1
torture_exclude='^lib-(buffer|bytes-utf)/test\.ml$'
torture_reason="under torture: a 7-10M-word heap verified after each of 11,000+ collections (hours)"
only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs="$2"; shift 2 ;;
    --torture) torture="$2"; shift 2 ;;
    --no-torture) torture=""; shift ;;
    --torture-timeout) torture_timeout="$2"; shift 2 ;;
    --torture-exclude) torture_exclude="$2"; shift 2 ;;
    --torture-sample) torture_sample="$2"; shift 2 ;;
    --only) only=(--only "$2"); shift 2 ;;
    *) echo "usage: $0 [--jobs N] [--torture PARAMS|--no-torture]" \
         "[--torture-timeout S] [--only REGEX]" >&2; exit 2 ;;
  esac
done

tree="$("$here/build.sh" --print-tree)" || exit 1
mgc="$root/build/ocaml-port/ocamlrun-mgc"
[ -x "$mgc" ] || { echo "test.sh: $mgc missing: make ocaml-port" >&2; exit 1; }
work="$root/build/ocaml-port/test"
rm -rf "$work"
mkdir -p "$work"

passed=0
failed=0
summary=()
run() { # NAME ARGS...
  local name="$1"; shift
  echo "== OCaml testsuite on ocamlrun-mgc: $name"
  "$here/run-tests.sh" --tree "$tree" --ocamlrun-mgc "$mgc" --jobs "$jobs" \
    --work "$work/$name" "${only[@]}" "$@" | tee "$work/$name.log"
  local last p f
  last="$(tail -1 "$work/$name.log")"
  if [[ "$last" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    p="${BASH_REMATCH[1]}"; f="${BASH_REMATCH[2]}"
  else
    p=0; f=1
  fi
  passed=$((passed + p)); failed=$((failed + f))
  summary+=("$name: $last")
}

run plain
if [ -n "$torture" ]; then
  excl=()
  [ -n "$torture_exclude" ] &&
    excl=(--exclude "$torture_exclude" --exclude-reason "$torture_reason")
  sample=()
  if [ "$torture_sample" -gt 1 ]; then
    # The attempted tests, every K-th: an --only of exact paths.
    re="$("$here/run-tests.sh" --tree "$tree" --list --work "$work/list" \
            "${only[@]}" | cut -f1 |
          awk -v k="$torture_sample" '(NR - 1) % k == 0 {
              gsub(/[.+()]/, "\\\\&"); printf "%s%s", sep, $0; sep = "|" }')"
    sample=(--only "^($re)\$")
    only=()
  fi
  run torture --mgc-params "$torture" --timeout "$torture_timeout" \
    "${excl[@]}" "${sample[@]}"
fi
# The port's own regression tests (tests/NAME.ml and NAME.reference),
# compiled by the stock compiler, run plainly, with the heap verified after
# every collection, and under torture.
echo "== the port's own tests (ports/ocaml/tests)"
pp=0
pf=0
mkdir -p "$work/own"
modes=("" "V=1")
[ -n "$torture" ] && modes+=("$torture")
for src in "$here"/tests/*.ml; do
  name="$(basename "$src" .ml)"
  cp "$src" "$work/own/"
  (cd "$work/own" &&
     "$tree/runtime/ocamlrun" "$tree/ocamlc" -nostdlib -I "$tree/stdlib" \
       "$name.ml" -o "$name.byte") || { pf=$((pf + 1)); continue; }
  for mode in "${modes[@]}"; do
    out="$work/own/$name.${mode:-plain}.out"
    (cd "$work/own" && MGC_PARAMS="$mode" "$mgc" "./$name.byte" >"$out" 2>&1)
    if cmp -s "$out" "${src%.ml}.reference"; then
      echo "PASS tests/$name.ml (MGC_PARAMS=$mode)"; pp=$((pp + 1))
    else
      echo "FAIL tests/$name.ml (MGC_PARAMS=$mode)"; pf=$((pf + 1))
      diff "$out" "${src%.ml}.reference" | head -10 | sed 's/^/    /'
    fi
  done
done
passed=$((passed + pp)); failed=$((failed + pf))
summary+=("the port's own tests: $pp passed, $pf failed")

echo "== summary (logs in $work)"
for s in "${summary[@]}"; do echo "$s"; done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
