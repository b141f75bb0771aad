/* test_pacing: the held heap (DESIGN.md section 6.10, src/major.c).
 *
 * The major collector's pacing keeps the heap near (1 + o/100) times the
 * live data, except that a heap which was larger once may fill that memory
 * again: the rate is then scaled down, never below a quarter of the
 * model's, and the heap kept under 0.9 times the largest heap since the
 * last compaction.
 *
 *   part 1: a steady workload (a ring of lists, every list promoted and
 *           dropped later) in a fresh runtime: the model's number of
 *           major cycles, c0.
 *   part 2: a fresh runtime, a burst of live data four times the steady
 *           ring, dropped and collected, then the same steady workload:
 *           at most two thirds as many cycles as c0, and the heap never above
 *           the top the burst set (top_heap_words unchanged).
 *   part 3: in the same runtime, mgc_compact gives the memory back and
 *           with it the licence: the steady workload runs at least 0.7 c0
 *           cycles again.
 * The parameters come from MGC_PARAMS like every test, except the minor
 * pause goal, turned off (P=0): it sizes the minor heap from measured
 * pause times, which made the counts depend on the machine's speed (an
 * ASan run on a loaded machine passed the burst's top by 8192 words; at
 * P=400 or 500 the check failed on an unloaded one).  The comparisons
 * are between runs under the same parameters.  Under torture mode (a
 * minor collection at every allocation) and with a compaction at every
 * cycle end (which gives the held memory back each time), only the values
 * are checked, not the counts.
 */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"

#define CELLS 10

static long RING;      /* lists in the ring: 20000, scaled */
static mgc_value ring; /* global root: an old array of RING lists */

/* A list of n cells holding seed, seed + 1, ... */
static mgc_value make_list(long n, long seed) {
  MGC_PARAM0;
  MGC_LOCAL1(l);
  l = MGC_UNIT;
  for (long i = 0; i < n; i++) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(seed + i);
    MGC_FIELD(c, 1) = l;
    l = c;
  }
  MGC_RETURN(l);
}

static void fill_ring(void) {
  ring = mgc_alloc(RING, 0);
  for (long i = 0; i < RING; i++)
    mgc_initialize(&MGC_FIELD(ring, i), MGC_UNIT);
  for (long i = 0; i < RING; i++) {
    mgc_value l = make_list(CELLS, i);
    mgc_modify(&MGC_FIELD(ring, i), l);
  }
}

/* Each round replaces the oldest list: every list lives RING rounds, long
   enough to be promoted, and dies in the major heap.  Returns the major
   cycles the rounds took. */
static uint64_t steady(long rounds) {
  mgc_stats s0, s1;
  mgc_get_stats(&s0);
  for (long r = 0; r < rounds; r++) {
    mgc_value l = make_list(CELLS, r);
    mgc_modify(&MGC_FIELD(ring, r % RING), l);
  }
  mgc_get_stats(&s1);
  return s1.major_collections - s0.major_collections;
}

static int ring_intact(void) {
  for (long i = 0; i < RING; i++) {
    mgc_value l = MGC_FIELD(ring, i);
    for (int k = 0; k < CELLS; k++) {
      if (!MGC_IS_BLOCK(l))
        return 0;
      l = MGC_FIELD(l, 1);
    }
    if (l != MGC_UNIT)
      return 0;
  }
  return 1;
}

static int start(void) {
  int r = mgc_init(NULL);
  if (!CHECK(r == 0, "mgc_init -> %d", r))
    return 0;
  mgc_params p;
  mgc_get_params(&p);
  p.minor_pause_goal_us = 0;
  if (!CHECK(mgc_set_params(&p) == MGC_OK, "the pause goal off"))
    return 0;
  ring = MGC_UNIT;
  mgc_register_global_root(&ring);
  fill_ring();
  return 1;
}

int main(void) {
  long rounds = test_scale(400000);
  mgc_stats s;
  mgc_params p;
  setvbuf(stdout, NULL, _IOLBF, 0);
  RING = test_scale(20000);

  /* part 1 */
  if (!start())
    return check_done();
  mgc_get_params(&p);
  int counts = p.torture_every == 0 && p.compact_every == 0;
  uint64_t c0 = steady(rounds);
  CHECK(ring_intact(), "part 1: ring intact");
  printf("model: %llu cycles\n", (unsigned long long)c0);
  if (counts)
    CHECK(c0 >= 8, "part 1: the steady rounds take %llu >= 8 cycles",
          (unsigned long long)c0);
  mgc_shutdown();

  /* part 2 */
  if (!start())
    return check_done();
  {
    MGC_PARAM0;
    MGC_LOCAL1(b);
    b = make_list(4L * RING * CELLS, 0);
    mgc_full_major();
    long n = 0;
    for (mgc_value c = b; MGC_IS_BLOCK(c); c = MGC_FIELD(c, 1))
      n++;
    CHECK(n == 4L * RING * CELLS, "part 2: burst of %ld cells", n);
    MGC_DROP;
  }
  mgc_full_major();
  mgc_get_stats(&s);
  uint64_t top = s.top_heap_words;
  if (counts)
    CHECK(s.heap_words * 2 < top, "part 2: burst collected: heap %llu of %llu",
          (unsigned long long)s.heap_words, (unsigned long long)top);
  uint64_t c1 = steady(rounds);
  mgc_get_stats(&s);
  printf("after a burst: %llu cycles, top %llu -> %llu words\n",
         (unsigned long long)c1, (unsigned long long)top,
         (unsigned long long)s.top_heap_words);
  CHECK(ring_intact(), "part 2: ring intact");
  if (counts)
    CHECK(c1 * 3 <= c0 * 2, "part 2: %llu cycles after a burst, %llu without",
          (unsigned long long)c1, (unsigned long long)c0);
  if (counts)
    CHECK(s.top_heap_words == top, "part 2: the heap stays under its top %llu",
          (unsigned long long)top);

  /* part 3 */
  mgc_compact();
  uint64_t c2 = steady(rounds);
  CHECK(ring_intact(), "part 3: ring intact");
  printf("after a compaction: %llu cycles\n", (unsigned long long)c2);
  if (counts)
    CHECK(c2 * 10 >= c0 * 7,
          "part 3: %llu cycles after a compaction, %llu "
          "without a burst",
          (unsigned long long)c2, (unsigned long long)c0);
  mgc_shutdown();
  return check_done();
}
