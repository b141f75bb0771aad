#!/usr/bin/env bash
# bench.sh: "the compiler compiling all attempted tests", timed on the stock
# ocamlrun and on ocamlrun-mgc.
#
#   bench.sh --tree DIR --ocamlrun-mgc PATH [--runs N] [--work DIR]
#            [--warmup N] [--mgc-params STR]
#
# One timed shell loop runs  RUNTIME $TREE/ocamlc -nostdlib -I $TREE/stdlib
# FLAGS -c MODULES  once per test that run-tests.sh attempts (its --list),
# with each test's own flags.  Runs are paired, stock and mgc alternating
# (stock first in even pairs, mgc first in odd ones), after N untimed warm-up
# loops of each.  Prints the median wall time of a loop, the ratio mgc/stock,
# and the peak RSS: the largest ru_maxrss of any one compiler process.
# See ports/ocaml/README.md, section "Benchmark".

set -u
export LC_ALL=C

usage() {
  cat >&2 <<'EOF'
usage: bench.sh --tree DIR --ocamlrun-mgc PATH [--runs N] [--work DIR]
                [--warmup N] [--mgc-params STR]
  --runs N         timed loops per runtime (default 5)
  --warmup N       untimed loops per runtime first (default 1)
  --work DIR       scratch directory (default: a fresh mktemp -d)
  --mgc-params STR exported as MGC_PARAMS to the ocamlrun-mgc loops
EOF
  exit 2
}

TREE= MGC= RUNS=5 WARMUP=1 WORK= MGC_PARAMS_SET=0 MGC_PARAMS_VAL=
while [ $# -gt 0 ]; do
  case "$1" in
    --tree) TREE=${2-}; shift 2 || usage ;;
    --ocamlrun-mgc) MGC=${2-}; shift 2 || usage ;;
    --runs) RUNS=${2-}; shift 2 || usage ;;
    --warmup) WARMUP=${2-}; shift 2 || usage ;;
    --work) WORK=${2-}; shift 2 || usage ;;
    --mgc-params) MGC_PARAMS_SET=1; MGC_PARAMS_VAL=${2-}; shift 2 || usage ;;
    -h|--help) usage ;;
    *) echo "bench.sh: unknown argument '$1'" >&2; usage ;;
  esac
done
[ -n "$TREE" ] && [ -n "$MGC" ] || usage
case "$RUNS" in ''|*[!0-9]*|0) echo "bench.sh: bad --runs" >&2; exit 2 ;; esac
case "$WARMUP" in ''|*[!0-9]*) echo "bench.sh: bad --warmup" >&2; exit 2 ;; esac

HERE=$(cd "$(dirname "$0")" && pwd)
TREE=$(cd "$TREE" 2>/dev/null && pwd) || { echo "bench.sh: no tree" >&2; exit 2; }
STOCK=$TREE/runtime/ocamlrun
OCAMLC=$TREE/ocamlc
case "$MGC" in
  */*) MGC=$(cd "$(dirname "$MGC")" && pwd)/$(basename "$MGC") ;;
  *) MGC=$(command -v "$MGC") ;;
esac
[ -x "$MGC" ] || { echo "bench.sh: $MGC is not executable" >&2; exit 2; }
if [ -z "$WORK" ]; then
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/ocaml-mgc-bench.XXXXXX") || exit 2
else
  mkdir -p "$WORK" && WORK=$(cd "$WORK" && pwd) || exit 2
fi
case "$WORK$TREE" in *[[:space:]]*) echo "bench.sh: paths with blanks are not supported" >&2; exit 2 ;; esac
rm -rf "$WORK/src" "$WORK/rss" "$WORK/list"
mkdir -p "$WORK/src" "$WORK/rss"

# --- the per-process peak RSS helper: fork, exec, wait4, ru_maxrss ---------
WRAP= NOW=
if command -v cc > /dev/null 2>&1; then
  cat > "$WORK/rsswrap.c" <<'EOF'
/* rsswrap now            prints CLOCK_MONOTONIC in nanoseconds
   rsswrap OUT cmd args   runs cmd, appends "STATUS MAXRSS_KB CPU_US" to
                          OUT (CPU_US: user + system time of cmd), exits
                          with cmd's status */
#define _DEFAULT_SOURCE
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <sys/time.h>
#include <sys/resource.h>
int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "now") == 0) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("%lld%09ld\n", (long long)ts.tv_sec, (long)ts.tv_nsec);
    return 0;
  }
  if (argc < 3) { fprintf(stderr, "usage: rsswrap now | rsswrap OUT cmd...\n"); return 2; }
  pid_t pid = fork();
  if (pid < 0) { perror("fork"); return 2; }
  if (pid == 0) { execvp(argv[2], argv + 2); perror(argv[2]); _exit(127); }
  int st; struct rusage ru;
  if (wait4(pid, &st, 0, &ru) < 0) { perror("wait4"); return 2; }
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  FILE *f = fopen(argv[1], "a");
  long long cpu = (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000
                + ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
  if (f) { fprintf(f, "%d %ld %lld\n", code, (long)ru.ru_maxrss, cpu); fclose(f); }
  return code;
}
EOF
  if cc -O2 -o "$WORK/rsswrap" "$WORK/rsswrap.c" 2> "$WORK/rsswrap.log"; then
    WRAP=$WORK/rsswrap; NOW="$WORK/rsswrap now"
  fi
fi
if [ -z "$WRAP" ]; then
  echo "bench.sh: no C compiler: peak RSS with GNU time if present" >&2
  if /usr/bin/time -f %M -a -o /dev/null true > /dev/null 2>&1; then
    printf '#!/bin/sh\nout=$1; shift\nexec /usr/bin/time -f "%%x %%M -1" -a -o "$out" "$@"\n' > "$WORK/rsswrap.sh"
    chmod +x "$WORK/rsswrap.sh"; WRAP=$WORK/rsswrap.sh
  fi
fi
if [ -z "$NOW" ]; then NOW="date +%s%N"; fi

# --- the compile commands ----------------------------------------------------
"$HERE/run-tests.sh" --tree "$TREE" --list --work "$WORK/list" > "$WORK/tests" \
  || { echo "bench.sh: run-tests.sh --list failed" >&2; exit 2; }
NT=0
: > "$WORK/cmds"
# (tab is IFS white space: adjacent tabs would merge; split on \037 instead)
while IFS=$'\037' read -r rel flags mods; do
  d=$WORK/src/$NT; mkdir -p "$d"
  paths=
  for m in $mods; do
    cp "$TREE/testsuite/tests/$(dirname "$rel")/$m" "$d/$m" || exit 2
    paths="$paths $d/$m"
  done
  printf '%s\037%s\n' "$flags" "${paths# }" >> "$WORK/cmds"
  NT=$((NT + 1))
done < <(awk -F '\t' '{ print $1 "\037" $2 "\037" $3 }' "$WORK/tests")
[ "$NT" -gt 0 ] || { echo "bench.sh: no tests" >&2; exit 2; }

# loop RUNTIME LABEL RSSFILE: prints the wall time in ns
loop() {
  local rt=$1 label=$2 rss=$3 t0 t1 flags paths
  local -a fl pa extra=()
  [ "$label" = mgc ] && [ "$MGC_PARAMS_SET" = 1 ] && extra=(env "MGC_PARAMS=$MGC_PARAMS_VAL")
  t0=$($NOW)
  while IFS=$'\037' read -r flags paths; do
    set -f; fl=($flags); pa=($paths); set +f
    ${extra[@]+"${extra[@]}"} $WRAP ${WRAP:+"$rss"} "$rt" "$OCAMLC" -nostdlib -I "$TREE/stdlib" \
      ${fl[@]+"${fl[@]}"} -c "${pa[@]}" > /dev/null 2>&1 < /dev/null
  done < "$WORK/cmds"
  t1=$($NOW)
  echo $((t1 - t0))
}

echo "bench: $NT compiles per loop (ocamlc -c, one process per test), $RUNS paired runs, $WARMUP warm-up"
echo "stock: $STOCK"
echo "mgc:   $MGC$( [ "$MGC_PARAMS_SET" = 1 ] && echo " (MGC_PARAMS=$MGC_PARAMS_VAL)")"
for ((r = 0; r < WARMUP; r++)); do
  loop "$STOCK" stock "$WORK/rss/warm.stock" > /dev/null
  loop "$MGC" mgc "$WORK/rss/warm.mgc" > /dev/null
done
: > "$WORK/times.stock"; : > "$WORK/times.mgc"; : > "$WORK/cpu.stock"; : > "$WORK/cpu.mgc"
for ((r = 0; r < RUNS; r++)); do
  if [ $((r % 2)) = 0 ]; then order="stock mgc"; else order="mgc stock"; fi
  for label in $order; do
    if [ "$label" = stock ]; then rt=$STOCK; else rt=$MGC; fi
    ns=$(loop "$rt" "$label" "$WORK/rss/$r.$label")
    echo "$ns" >> "$WORK/times.$label"
    cpu=$(awk '{ s += $3 } END { print s * 1000 }' "$WORK/rss/$r.$label")
    echo "$cpu" >> "$WORK/cpu.$label"
    printf '  run %d %-5s %8.3f s wall %8.3f s cpu\n' "$((r + 1))" "$label" \
      "$(awk -v n="$ns" 'BEGIN { print n / 1e9 }')" "$(awk -v n="$cpu" 'BEGIN { print n / 1e9 }')"
  done
done

# --- report --------------------------------------------------------------
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
peak() { cat "$WORK"/rss/*."$1" 2>/dev/null | awk 'BEGIN { m = 0 } $2 > m { m = $2 } END { print m }'; }
statuses() { cat "$WORK"/rss/[0-9]*."$1" 2>/dev/null | awk '{ print $1 }' | sort | uniq -c | awk '{ printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1 }'; }
ms=$(median "$WORK/times.stock"); mm=$(median "$WORK/times.mgc")
cs=$(median "$WORK/cpu.stock"); cm=$(median "$WORK/cpu.mgc")
rs=$(peak stock); rm_=$(peak mgc)
# per test exit statuses of the last run: the two compilers must agree
last=$((RUNS - 1))
agree="n/a"
if [ -n "$WRAP" ] && [ -s "$WORK/rss/$last.stock" ]; then
  if [ "$(awk '{ print $1 }' "$WORK/rss/$last.stock")" = "$(awk '{ print $1 }' "$WORK/rss/$last.mgc")" ]; then agree=yes; else agree=NO; fi
fi
echo
awk -v ms="$ms" -v mm="$mm" -v cs="$cs" -v cm="$cm" -v rs="$rs" -v rm="$rm_" -v nt="$NT" -v agree="$agree" \
    -v ts="$(sort -n "$WORK/times.stock" | awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 / 1e9 }')" \
    -v tm="$(sort -n "$WORK/times.mgc" | awk '{ printf "%s%.2f", (NR > 1 ? " " : ""), $1 / 1e9 }')" 'BEGIN {
  printf "%-16s %12s %12s %14s %13s   %s\n", "runtime", "median wall", "median cpu", "wall/compile", "peak RSS", "wall of all runs (s, sorted)"
  printf "%-16s %10.3f s %10s %11.2f ms %9.1f MiB   %s\n", "stock ocamlrun", ms / 1e9, cpus(cs), ms / 1e6 / nt, rs / 1024, ts
  printf "%-16s %10.3f s %10s %11.2f ms %9.1f MiB   %s\n", "ocamlrun-mgc", mm / 1e9, cpus(cm), mm / 1e6 / nt, rm / 1024, tm
  printf "%-16s %12.3f %12s %14s %13s\n", "ratio mgc/stock", mm / ms, (cs > 0 ? sprintf("%.3f", cm / cs) : "n/a"), "", (rs > 0 ? sprintf("%.3f", rm / rs) : "n/a")
  printf "\nexit statuses of the compiles agree between the runtimes: %s\n", agree
}
function cpus(c) { return c > 0 ? sprintf("%.3f s", c / 1e9) : "n/a" }'
echo "compile exit statuses (all timed runs): stock: $(statuses stock); mgc: $(statuses mgc)"
[ -n "$WRAP" ] || echo "(peak RSS not measured: no C compiler and no GNU time)"
