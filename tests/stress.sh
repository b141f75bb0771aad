#!/usr/bin/env bash
# Long stress runs (make stress): the test programs again and again, each
# run with a fresh random seed (MGC_TEST_SEED, read by the programs that
# print "seed: N"; the others run their fixed choices again) and in one of
# the modes of tests/run.sh, for a given number of seconds.
#   tests/stress.sh BUILD SECONDS MODE=NAME,NAME... [MODE=NAME,NAME...]
# MODE: plain torture compact asan tsan; each with the programs it runs, as
# make stress passes them (the test programs of make test-MODE).
# Each round runs every (mode, program) pair once, in a
# shuffled order, so that short runs (CI's two minutes ran 131-141 of a
# round's 148) leave out different pairs each time rather than always the
# last ones.  A seed fixes a program's choices, not the
# interleaving of its domains: the rounds repeat each multi-domain program
# under new interleavings.  A failure's log is kept as
# BUILD/tests/stress/fail-N-MODE-NAME.log, whose first line is the command
# that runs the program again with its seed; the other logs are
# overwritten.  The last line is "stress: R runs, F failed, S s"; the exit
# status is 1 when F > 0, 2 when there is nothing to run.
set -u
build=$1 secs=$2
shift 2
out=$build/tests/stress
rm -rf "$out"
mkdir -p "$out/logs"
pairs=()
modes=
for arg in "$@"; do
  mode=${arg%%=*}
  modes="$modes $mode"
  case $mode in
    plain | torture | compact) dir=$build/tests/plain ;;
    asan) dir=$build/tests/asan ;;
    tsan) dir=$build/tests/tsan ;;
    *) echo "stress: unknown mode $mode" >&2; exit 2 ;;
  esac
  [ "$arg" = "$mode" ] && continue
  list=${arg#*=}
  for name in ${list//,/ }; do
    if [ ! -x "$dir/$name" ]; then
      echo "stress: $dir/$name is not built (make stress builds it)" >&2
      exit 2
    fi
    pairs+=("$mode $dir $name")
  done
done
if [ ${#pairs[@]} = 0 ]; then
  echo "stress: no test program in modes${modes:- (none given)}" >&2
  exit 2
fi
start=$(date +%s)
runs=0 failed=0 round=0
while :; do
  round=$((round + 1))
  while read -r mode dir name; do
    [ $(($(date +%s) - start)) -ge "$secs" ] && break 2
    seed=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
    runs=$((runs + 1))
    rm -f "$out/one.txt"
    line=$(MGC_TEST_SEED=$seed MGC_TEST_RESULTS=$out/one.txt \
      MGC_TEST_LOGS=$out/logs tests/run.sh "$mode" "$dir" "$name")
    line=${line%%$'\n'*}
    f=$(awk '{print $4}' "$out/one.txt" 2>/dev/null)
    echo "round $round seed $seed $line"
    if [ "${f:-1}" != 0 ]; then
      failed=$((failed + 1))
      keep=$out/fail-$failed-$mode-$name.log
      cp "$out/logs/$mode-$name.log" "$keep"
      echo "  kept $keep; replay: $(head -n 1 "$keep" | sed 's/^# //')"
    fi
  done < <(printf '%s\n' "${pairs[@]}" | shuf)
done
echo "stress: $runs runs, $failed failed, $(($(date +%s) - start)) s"
[ "$failed" = 0 ]
