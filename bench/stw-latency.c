/* stw-latency.c: the time from a collection request to all domains
 * stopped, while other domains sit in system calls.
 *
 * Domain 0 runs N minor collections (each on a small live list) while D-1
 * other domains are blocked in read() on a pipe inside a blocking section,
 * so their backup threads must take their part.  At the end domain 0
 * writes to the pipes, joins the domains, and prints the STW latency and
 * minor pause percentiles from mgc_get_stats.
 * Usage: stw-latency [N [D]]  (defaults 2000, 2)
 */
#define _DEFAULT_SOURCE
#include "mgc_bench.h"

#include <stdatomic.h>
#include <unistd.h>

static int pipes[64][2];
static atomic_int blocked;

static mgc_value sleeper(mgc_value arg) {
  int k = (int)MGC_INT_VAL(arg);
  char c;
  atomic_fetch_add(&blocked, 1);
  mgc_enter_blocking_section();
  ssize_t r = read(pipes[k][0], &c, 1);
  mgc_leave_blocking_section();
  return MGC_VAL_INT(r);
}

int main(int argc, char **argv) {
  long n = bench_arg(argc, argv, 1, 2000);
  int d = (int)bench_arg(argc, argv, 2, 2);
  if (d < 2 || d > 64)
    d = 2;
  mgc_bench_init();
  mgc_domain *doms[64];
  for (int k = 1; k < d; k++) {
    if (pipe(pipes[k]) != 0)
      return 1;
    doms[k] = mgc_domain_spawn(sleeper, MGC_VAL_INT(k));
    if (!doms[k])
      return 1;
  }
  while (atomic_load(&blocked) < d - 1)
    mgc_poll();
  usleep(10000); /* let them reach read() */
  long sum = 0;
  {
    MGC_PARAM0;
    MGC_LOCAL1(list);
    for (long i = 0; i < n; i++) {
      mgc_value c = mgc_alloc_small(2, 0);
      MGC_FIELD(c, 0) = MGC_VAL_INT(i);
      MGC_FIELD(c, 1) = i % 64 ? list : MGC_UNIT;
      list = c;
      mgc_minor_collection();
    }
    for (mgc_value l = list; MGC_IS_BLOCK(l); l = MGC_FIELD(l, 1))
      sum += MGC_INT_VAL(MGC_FIELD(l, 0));
    MGC_DROP;
  }
  for (int k = 1; k < d; k++) {
    if (write(pipes[k][1], "x", 1) != 1)
      return 1;
    sum += MGC_INT_VAL(mgc_domain_join(doms[k]));
  }
  mgc_stats s;
  mgc_get_stats(&s);
  printf("collections with %d domains blocked in read(): %ld\n", d - 1, n);
  printf("stw latency p50 %.1f us, p99 %.1f us, max %.1f us\n",
         s.stw_latency_p50_ns / 1e3, s.stw_latency_p99_ns / 1e3,
         s.stw_latency_max_ns / 1e3);
  printf("checksum: %ld\n", sum);
  mgc_bench_finish();
  return 0;
}
