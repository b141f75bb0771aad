#!/usr/bin/env bash
# Runs test programs in one configuration and records their results.
#   tests/run.sh MODE DIR NAME...
# MODE: plain | torture (MGC_PARAMS=t=1,V=1, sizes scaled down) |
#       compact (MGC_PARAMS=C=1,V=1: blocks move at every major cycle end) |
#       asan | tsan
# Each program ends with "N passed, N failed"; a program that dies without
# that line counts as one failure.  Results go to DIR/../results.txt and
# logs to DIR/../logs/MODE-NAME.log (MGC_TEST_RESULTS and MGC_TEST_LOGS
# change those: tests/stress.sh).
set -u
mode=$1 dir=$2
shift 2
results=${MGC_TEST_RESULTS:-$(dirname "$dir")/results.txt}
logs=${MGC_TEST_LOGS:-$(dirname "$dir")/logs}
mkdir -p "$logs"
env_for() {
  case $mode in
    torture) echo "MGC_PARAMS=t=1,V=1 MGC_TEST_SCALE=${MGC_TORTURE_SCALE:-500}" ;;
    compact) echo "MGC_PARAMS=C=1,V=1 MGC_TEST_SCALE=${MGC_COMPACT_SCALE:-4}" ;;
    asan) echo "ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 MGC_TEST_SCALE=${MGC_ASAN_SCALE:-4}" ;;
    tsan) echo "TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 MGC_TEST_SCALE=${MGC_TSAN_SCALE:-8}" ;;
    *) echo "MGC_TEST_SCALE=${MGC_TEST_SCALE:-1}" ;;
  esac
}
status=0
for name in "$@"; do
  log=$logs/$mode-$name.log
  start=$(date +%s)
  # The first line: how to run it again by hand.
  echo "# ${MGC_TEST_SEED:+MGC_TEST_SEED=$MGC_TEST_SEED }$(env_for) $dir/$name" >"$log"
  env $(env_for) timeout "${MGC_TEST_TIMEOUT:-900}" "$dir/$name" >>"$log" 2>&1
  rc=$?
  secs=$(( $(date +%s) - start ))
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)
  if [ -n "$line" ]; then
    p=$(echo "$line" | awk '{print $1}')
    f=$(echo "$line" | awk '{print $3}')
  else
    p=0 f=0
  fi
  if [ $rc -ne 0 ] && [ "$f" = 0 ]; then f=1; fi
  if grep -qE 'ThreadSanitizer|AddressSanitizer|LeakSanitizer|runtime error:' "$log"; then
    [ "$f" = 0 ] && f=1
  fi
  verdict=ok
  [ "$f" != 0 ] && verdict=FAIL && status=1
  printf '%-8s %-28s %6s passed %4s failed  %4ss  %s\n' "$mode" "$name" "$p" "$f" "$secs" "$verdict"
  if [ "$verdict" = FAIL ]; then
    echo "---- last lines of $log:"; tail -n 15 "$log"; echo "----"
  fi
  echo "$mode $name $p $f" >>"$results"
done
exit 0
