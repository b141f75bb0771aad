/* test_domains_pause.c: the pause-aware minor heap with several domains
 * (DESIGN §5.8).
 *
 * A minor collection stops every domain, and each waits at the promotion
 * barrier for the one with most to promote.  The part of its minor heap a
 * domain uses next is sized from its own work, up to its arrival at that
 * barrier: a domain that promoted nothing would not shorten the pause by
 * using less of its heap, so the wait must not count as its pause.
 *
 * Both domains start with the whole heap in use (no goal at init: a new
 * heap with a goal would start at the model's cap); the goal is set once
 * domain 1 has emptied its heap.  Domain 1 then builds a list of about
 * 3/4 of its minor heap (a 1M-word heap: several ms to promote) and
 * collects; domain 0 takes part in the same collection with nothing
 * young.  Checks: the pause domain 0 recorded is
 * shorter than domain 1's (counting the wait, it would be at least as
 * long); with a goal between the two, domain 0's part is not shrunk when
 * its own pause is under half the goal, while domain 1's, which exceeded
 * the goal, is; the list is intact and the heap verifies.  The check on
 * domain 1 is made only when its pause did exceed the goal, and that on
 * domain 0 only when its own pause was under half of it (the rule, not a
 * speed, is what is tested).
 *
 * Under torture (a collection per allocation) only the list and the
 * verifier are checked.  Run under ThreadSanitizer by `make test`
 * (test-tsan).
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"

#include "../src/internal.h"
#include "lists.h"

#include <stdio.h>

#define HEAP_WORDS (1u << 20)
#define GOAL_US 400

static atomic_int phase; /* 0: building, 1: domain 1 collected */
static atomic_int go;    /* domain 0 is back from the spawn */
static atomic_int list_good;

static size_t part_words(struct mgc_dom *d) {
  return (d->young_end - d->young_floor) / sizeof(mgc_value);
}

/* What each domain recorded for each collection it took part in, logged
   by the begin hook of the next one (and once more at the end): the
   collection's number, the domain's own pause and the part it chose. */
enum { LOG = 256 };
struct entry {
  uint64_t seq, pause;
  size_t part;
};
static struct entry logs[2][LOG];
static int logged[2];

static void log_domain(struct mgc_dom *d, int i) {
  if (d->minor_seq != 0 && logged[i] < LOG)
    logs[i][logged[i]++] =
        (struct entry){d->minor_seq, d->last_pause_ns, part_words(d)};
}

static void begin_hook(void) {
  struct mgc_dom *d = mgc_self();
  if (d && d->id >= 0 && d->id < 2)
    log_domain(d, d->id);
}

static mgc_value builder(mgc_value arg) {
  (void)arg;
  /* Domain 0 must take part in the collections on its own thread (its
     begin hook logs it), not be in the spawn's blocking section, where
     its backup thread would act for it. */
  while (!atomic_load(&go))
    mgc_poll();
  MGC_PARAM0;
  MGC_LOCAL1(list);
  mgc_minor_collection(); /* an empty heap, the whole part in use */
  mgc_params p;
  mgc_get_params(&p);
  p.minor_pause_goal_us = GOAL_US;
  CHECK(mgc_set_params(&p) == MGC_OK, "set the goal");
  long n = test_scale((long)(HEAP_WORDS * 3 / 4) / 3);
  list = make_list(n);
  mgc_minor_collection();
  atomic_store(&list_good, list_ok(list, n));
  MGC_DROP;
  log_domain(mgc_self(), 1);
  atomic_store(&phase, 1);
  return MGC_UNIT;
}

/* The entry of domain i for collection seq, or NULL. */
static struct entry *find(int i, uint64_t seq) {
  for (int k = 0; k < logged[i]; k++)
    if (logs[i][k].seq == seq)
      return &logs[i][k];
  return NULL;
}

int main(void) {
  mt_watchdog(300);
  mgc_params p;
  mgc_params_default(&p);
  p.minor_heap_words = HEAP_WORDS;
  p.minor_pause_goal_us = 0;
  CHECK(mgc_init(&p) == MGC_OK, "init");
  struct mgc_dom *d0 = mgc_self();
  mgc_minor_collection();
  size_t full = part_words(d0);
  CHECK(full == HEAP_WORDS, "no goal: the whole heap in use (%zu)", full);
  mgc_set_minor_gc_begin_hook(begin_hook);
  mgc_domain *h = mgc_domain_spawn(builder, MGC_UNIT);
  CHECK(h != NULL, "spawn: %s", mgc_strerror(mgc_last_error()));
  if (h) {
    /* Take part in domain 1's collections, with nothing young. */
    atomic_store(&go, 1);
    while (!atomic_load(&phase))
      mgc_poll();
    log_domain(d0, 0);
    mgc_domain_join(h);
    mgc_set_minor_gc_begin_hook(NULL);
    /* Domain 1's collection that promoted the list: its longest pause,
       the one before which it used its whole part. */
    struct entry *big = NULL;
    for (int k = 0; k < logged[1]; k++)
      if (!big || logs[1][k].pause > big->pause)
        big = &logs[1][k];
    struct entry *e0 = big ? find(0, big->seq) : NULL;
    CHECK(big && e0,
          "domain 0 took part in domain 1's big collection "
          "(%d and %d logged)",
          logged[0], logged[1]);
    CHECK(atomic_load(&list_good), "domain 1's list survived intact");
    mgc_params now;
    mgc_get_params(&now);
    /* Under torture every allocation collects: there is no big one. */
    if (big && e0 && now.torture_every == 0) {
      CHECK(e0->pause < big->pause,
            "domain 0's pause leaves out the wait (%.1f us, domain 1's "
            "%.1f us)",
            e0->pause / 1e3, big->pause / 1e3);
      if (e0->pause < GOAL_US * 500ull)
        CHECK(e0->part == full,
              "domain 0, own pause %.1f us: whole part kept (%zu of %zu)",
              e0->pause / 1e3, e0->part, full);
      if (big->pause > GOAL_US * 1000ull)
        CHECK(big->part < full,
              "domain 1, pause %.1f us over the goal: part shrunk (%zu of "
              "%zu)",
              big->pause / 1e3, big->part, full);
      printf("domain 0 pause %.1f us, part %zu; domain 1 pause %.1f us, "
             "part %zu (of %zu)\n",
             e0->pause / 1e3, e0->part, big->pause / 1e3, big->part, full);
    }
    CHECK(mgc_verify_heap() == 0, "heap verifies");
  }
  mgc_shutdown();
  return check_done();
}
