/* test_domains_poll.c: a domain in a loop that does not allocate.
 *
 * DESIGN.md §2.3-§2.5 and the poll test of §9: a domain spinning on an
 * atomic flag without allocating answers stop-the-world requests only
 * through mgc_poll().  While it loops, another domain performs minor
 * collections, major slices and full majors; they must complete, and the
 * looping domain's rooted values must be updated under its feet: it
 * publishes, at each turn of its loop, the address its root holds, and the
 * collector waits to see that address become old.  At the end the looping
 * domain checks its values are intact.  Also run with two looping domains
 * and with the collector being domain 0 or a spawned domain.
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"

#include <stdio.h>

#define SEED 31337u
#define MAXLOOPERS 2

/* Under torture mode (t=N) every allocation may collect, so values are
   seldom still young when a test looks at them. */
static int torture_on(void) {
  mgc_params p;
  mgc_get_params(&p);
  return p.torture_every != 0;
}

static atomic_int stop_loop;
static atomic_long loop_turns[MAXLOOPERS];
static atomic_uintptr_t loop_root[MAXLOOPERS]; /* what the root holds now */
static atomic_int loop_started[MAXLOOPERS];
static uint64_t seed;

static mgc_value make_pair(long a, mgc_value b) {
  MGC_PARAM1(b);
  mgc_value p = mgc_alloc_small(2, 0);
  MGC_FIELD(p, 0) = MGC_VAL_INT(a);
  MGC_FIELD(p, 1) = b;
  MGC_RETURN(p);
}

/* arg = index of the looper.  Builds young values, then loops on
   stop_loop with nothing but mgc_poll() in the loop. */
static mgc_value looper_body(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL2(a, b);
  int self = (int)MGC_INT_VAL(arg);
  long turns = 0, bad = 0, i;
  int was_young;
  for (i = 0; i < 50; i++)
    a = make_pair(i, a);
  b = mgc_copy_string("polled");
  was_young = mgc_is_young(a) && mgc_is_young(b);
  atomic_store_explicit(&loop_root[self], (uintptr_t)a, memory_order_release);
  atomic_store_explicit(&loop_started[self], 1, memory_order_release);
  while (!atomic_load_explicit(&stop_loop, memory_order_acquire)) {
    mgc_poll();
    atomic_store_explicit(&loop_root[self], (uintptr_t)a, memory_order_release);
    atomic_store_explicit(&loop_turns[self], ++turns, memory_order_relaxed);
  }
  for (i = 49; i >= 0; i--) {
    bad += !MGC_IS_BLOCK(a) || MGC_FIELD(a, 0) != MGC_VAL_INT(i);
    a = MGC_IS_BLOCK(a) ? MGC_FIELD(a, 1) : MGC_UNIT;
  }
  bad += a != MGC_UNIT || strcmp(MGC_STRING_VAL(b), "polled") != 0 ||
         mgc_is_young(b);
  MT_CHECK((was_young || torture_on()) && bad == 0,
           "looper %d: values young before the loop (%d), intact after %ld "
           "turns (%ld broken)",
           self, was_young, turns, bad);
  MGC_RETURN(MGC_VAL_INT(turns));
}

/* Collections while nloopers domains loop; returns the number of failed
   observations. */
static long collect_against_loopers(int nloopers, long count,
                                    struct mt_rng *rng) {
  MGC_PARAM0;
  MGC_LOCAL1(keep);
  long i, bad = 0, updated = 0;
  int k;
  unsigned long spins = 0;
  for (k = 0; k < nloopers; k++)
    while (!atomic_load_explicit(&loop_started[k], memory_order_acquire))
      mt_relax(&spins);
  keep = make_pair(7, MGC_UNIT);
  for (i = 0; i < count; i++) {
    uint64_t what = mt_below(rng, 10);
    (void)mgc_alloc(1 + (size_t)mt_below(rng, 20), 0);
    if (what < 7)
      mgc_minor_collection();
    else if (what < 9) {
      mgc_minor_collection();
      mgc_major_slice(0);
    } else
      mgc_full_major();
  }
  /* The loopers' roots were promoted by these collections: wait until each
     looper has published an old address, which it can only do after a
     poll that followed the first collection. */
  for (k = 0; k < nloopers; k++) {
    long t0 = atomic_load_explicit(&loop_turns[k], memory_order_relaxed);
    while (atomic_load_explicit(&loop_turns[k], memory_order_relaxed) < t0 + 2)
      mt_relax(&spins);
    updated += !mgc_is_young(
        (mgc_value)atomic_load_explicit(&loop_root[k], memory_order_acquire));
  }
  bad += updated != nloopers;
  MT_CHECK(updated == nloopers,
           "%d loopers: %ld saw their root updated to an old copy", nloopers,
           updated);
  bad += MGC_FIELD(keep, 0) != MGC_VAL_INT(7) || mgc_is_young(keep);
  MGC_RETURN(bad);
}

static mgc_value collector_body(mgc_value arg) {
  MGC_PARAM1(arg);
  struct mt_rng rng;
  long bad;
  mt_rng_seed(&rng, seed, 5);
  bad = collect_against_loopers((int)MGC_INT_VAL(arg), test_scale(300), &rng);
  atomic_store_explicit(&stop_loop, 1, memory_order_release);
  MGC_RETURN(MGC_VAL_INT(bad));
}

static void reset(void) {
  int k;
  atomic_store(&stop_loop, 0);
  for (k = 0; k < MAXLOOPERS; k++) {
    atomic_store(&loop_turns[k], 0);
    atomic_store(&loop_root[k], 0);
    atomic_store(&loop_started[k], 0);
  }
}

static void run(void) {
  MGC_PARAM0;
  MGC_LOCAL2(arg, res);
  mgc_domain *loopers[MAXLOOPERS], *coll;
  struct mt_rng rng;
  mgc_stats st0, st1;
  long bad, count = test_scale(300);
  int n, k;
  mt_rng_seed(&rng, seed, 0);

  /* Domain 0 collects against one, then two loopers. */
  for (n = 1; n <= MAXLOOPERS; n++) {
    reset();
    for (k = 0; k < n; k++) {
      arg = MGC_VAL_INT(k);
      loopers[k] = mgc_domain_spawn(looper_body, arg);
      if (!CHECK(loopers[k] != NULL, "spawn looper %d", k))
        exit(check_mt_done());
    }
    mgc_get_stats(&st0);
    bad = collect_against_loopers(n, count, &rng);
    mgc_get_stats(&st1);
    atomic_store_explicit(&stop_loop, 1, memory_order_release);
    MT_CHECK(bad == 0 && st1.minor_collections - st0.minor_collections >=
                             (uint64_t)count,
             "%d loopers: %ld collections by domain 0 completed", n, count);
    for (k = 0; k < n; k++) {
      res = mgc_domain_join(loopers[k]);
      MT_CHECK(MGC_INT_VAL(res) > 0, "looper %d ran %ld turns", k,
               (long)MGC_INT_VAL(res));
    }
  }

  /* A spawned domain collects against a looper while domain 0 joins. */
  reset();
  arg = MGC_VAL_INT(0);
  loopers[0] = mgc_domain_spawn(looper_body, arg);
  arg = MGC_VAL_INT(1);
  coll = mgc_domain_spawn(collector_body, arg);
  if (!CHECK(loopers[0] != NULL && coll != NULL, "spawns"))
    exit(check_mt_done());
  res = mgc_domain_join(coll);
  MT_CHECK(res == MGC_VAL_INT(0), "collections by a spawned domain against "
                                  "a looper");
  res = mgc_domain_join(loopers[0]);
  MT_CHECK(mgc_verify_heap() == 0, "verify at the end");
  MGC_DROP;
}

int main(int argc, char **argv) {
  mgc_params p;
  mt_watchdog(600);
  seed = test_seed(argc, argv, SEED);
  mgc_set_fatal_handler(check_fatal_handler);
  mgc_params_default(&p);
  p.max_domains = 4;
  p.minor_heap_words = 16384;
  if (!CHECK(mgc_init(&p) == 0, "mgc_init"))
    return check_done();
  run();
  mgc_shutdown();
  return check_mt_done();
}
