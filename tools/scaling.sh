#!/bin/sh
# scaling.sh [-n RUNS] [-d BINDIR] [-o OUTDIR] [-N DEPTH] [D...]
# mt-binarytrees DEPTH at each D (default: 1 2 4 ... up to the core count),
# mgc beside every peer built in BINDIR (default build/bench, from
# `make bench-build`), RUNS alternating rounds per D (default 5) through
# bench/harness.c, which checks every checksum.  Then one table
# (tools/scaling-table.py): per D, each implementation's median wall time,
# its speed-up over its own D=1, mgc's time over OCaml's as the median of
# the per-round ratios, and mgc's minor pauses (p50 / p99 / max of the run
# nearest the median).  The harness's tables, results.json and pauses.svg
# go to OUTDIR (default build/scaling).  Run from the repository root.
set -e
runs=5 bindir=build/bench outdir=build/scaling depth=20
while getopts n:d:o:N: opt; do
  case $opt in
  n) runs=$OPTARG ;;
  d) bindir=$OPTARG ;;
  o) outdir=$OPTARG ;;
  N) depth=$OPTARG ;;
  *) echo "usage: $0 [-n RUNS] [-d BINDIR] [-o OUTDIR] [-N DEPTH] [D...]" >&2
     exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ -x "$bindir/harness" ] && [ -x "$bindir/mt-binarytrees" ] || {
  echo "$0: $bindir/harness or $bindir/mt-binarytrees missing:" \
    "run make bench-build" >&2
  exit 1
}
if [ $# -eq 0 ]; then
  cores=$(getconf _NPROCESSORS_ONLN)
  d=1
  while [ "$d" -le "$cores" ]; do
    set -- "$@" "$d"
    d=$((d * 2))
  done
fi
mkdir -p "$outdir"
# One harness argument per D: WORKLOAD:ARGS.
for d do
  set -- "$@" "mt-binarytrees:$depth $d"
  shift
done
rc=0
"$bindir/harness" -n "$runs" -d "$bindir" -o "$outdir" "$@" \
  >"$outdir/harness.txt" || rc=$?
cat "$outdir/harness.txt"
if command -v python3 >/dev/null 2>&1; then
  python3 "$(dirname "$0")/scaling-table.py" "$outdir/results.json" \
    >"$outdir/scaling.txt" || rc=1
  cat "$outdir/scaling.txt"
else
  echo "$0: python3 not found: no table (see $outdir/results.json)" >&2
fi
exit $rc
