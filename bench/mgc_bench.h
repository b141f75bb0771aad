/* mgc_bench.h: what the mgc benchmark programs share: start-up that fails
 * loudly, and the last stderr line of figures from mgc_get_stats that
 * bench/harness.c parses.
 */
#ifndef MGC_BENCH_H
#define MGC_BENCH_H

#include "bench_util.h"
#include <mgc.h>

static inline void mgc_bench_init(void) {
  int err = mgc_init(NULL);
  if (err != MGC_OK) {
    fprintf(stderr, "mgc_init: %s\n", mgc_strerror(err));
    exit(3);
  }
}

/* Prints the mgc-stats line (pauses in microseconds), then shuts down. */
static inline void mgc_bench_finish(void) {
  mgc_stats s;
  fflush(stdout);
  mgc_get_stats(&s);
  fprintf(
      stderr,
      "mgc-stats: minor_collections=%llu major_collections=%llu"
      " minor_words=%llu promoted_words=%llu heap_words=%llu"
      " top_heap_words=%llu minor_pause_p50_us=%.3f"
      " minor_pause_p99_us=%.3f minor_pause_max_us=%.3f"
      " stw_latency_p99_us=%.3f stw_latency_max_us=%.3f"
      " major_words=%llu major_slices=%llu"
      " forced_major_collections=%llu remset_overflows=%llu"
      " major_stw_pause_p99_us=%.3f major_stw_pause_max_us=%.3f"
      " compactions=%llu compacted_words=%llu"
      " compaction_pause_max_us=%.3f\n",
      (unsigned long long)s.minor_collections,
      (unsigned long long)s.major_collections,
      (unsigned long long)s.minor_words, (unsigned long long)s.promoted_words,
      (unsigned long long)s.heap_words, (unsigned long long)s.top_heap_words,
      s.minor_pause_p50_ns / 1e3, s.minor_pause_p99_ns / 1e3,
      s.minor_pause_max_ns / 1e3, s.stw_latency_p99_ns / 1e3,
      s.stw_latency_max_ns / 1e3, (unsigned long long)s.major_words,
      (unsigned long long)s.major_slices,
      (unsigned long long)s.forced_major_collections,
      (unsigned long long)s.remset_overflows, s.major_stw_pause_p99_ns / 1e3,
      s.major_stw_pause_max_ns / 1e3, (unsigned long long)s.compactions,
      (unsigned long long)s.compacted_words, s.compaction_pause_max_ns / 1e3);
  mgc_shutdown();
}

#endif /* MGC_BENCH_H */
