#!/usr/bin/env bash
# Sums the results of tests/run.sh into the suite's one closing line.
set -u
f=$1
if [ ! -s "$f" ]; then echo "0 passed, 1 failed"; exit 1; fi
awk '{p += $3; q += $4} END {printf "%d passed, %d failed\n", p, q; exit (q > 0)}' "$f"
