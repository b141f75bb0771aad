#!/usr/bin/env bash
# ports/ocaml/test.sh: make ocaml-port-test.  Runs the test runner
# (run-tests.sh) over OCaml's testsuite twice with ocamlrun-mgc: plainly,
# then under mgc's torture mode (a minor collection every 1000
# allocations, the heap verified after every collection), each time
# against the stock ocamlrun of the same tree and with the compiler's
# output compared byte for byte.  The last line sums both runs:
# `N passed, M failed`; the exit status is 0 only when nothing failed.
#
#   ports/ocaml/test.sh [--jobs N] [--torture MGC_PARAMS | --no-torture]
#                       [--torture-timeout S] [--only REGEX]
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
jobs=2
torture="t=1000,V=1"
torture_timeout=900
only=()
while [ $# -gt 0 ]; do
  case "$1" in
    --jobs) jobs="$2"; shift 2 ;;
    --torture) torture="$2"; shift 2 ;;
    --no-torture) torture=""; shift ;;
    --torture-timeout) torture_timeout="$2"; shift 2 ;;
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
  run torture --mgc-params "$torture" --timeout "$torture_timeout"
fi
echo "== summary (logs in $work)"
for s in "${summary[@]}"; do echo "$s"; done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
