/* test_domains_pause.c: the pause-aware minor heap with several domains
 * (DESIGN §5.8).
 *
 * A minor collection stops every domain, and each waits at the promotion
 * barrier for the one with most to promote.  The part of its minor heap a
 * domain uses next is sized from its own work, up to its arrival at that
 * barrier: a domain that promoted nothing would not shorten the pause by
 * using less of its heap, so the wait must not count as its pause.
 * Unless there are more domains running than processors (mgc_crowded): the
 * domains then promote by turns, and the wait, for the others' turns,
 * counts.
 *
 * Both domains start with the whole heap in use (no goal at init: a new
 * heap with a goal would start at the model's cap); the goal is set once
 * domain 1 has emptied its heap.  Domain 1 then builds a list of about
 * 3/4 of its minor heap (a 1M-word heap: several ms to promote) and
 * collects; domain 0 takes part in the same collection with nothing
 * young.  The scenario runs twice, the processor count the runtime read
 * at init overridden: first one, then as many as domains.  Last, a
 * domain in a blocking section does not count as running.
 *
 * Not crowded: the pause domain 0 recorded is shorter than domain 1's
 * (counting the wait, it would be at least as long); with a goal between
 * the two, domain 0's part is not shrunk when its own pause is under half
 * the goal, while domain 1's, which exceeded the goal, is.  Crowded:
 * domain 0's pause counts the wait (at least half of domain 1's), and its
 * part shrinks when that pause exceeded the goal.  Each run: the list is
 * intact and the heap verifies.  The part checks are made only when the
 * pauses fall on the side of the goal that the rule is about (the rule,
 * not a speed, is what is tested).
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
  uint64_t seq, pause, promoted; /* promoted: the domain's total so far */
  size_t part;
};
static struct entry logs[2][LOG];
static int logged[2];

static void log_domain(struct mgc_dom *d, int i) {
  if (d->minor_seq != 0 && logged[i] < LOG)
    logs[i][logged[i]++] =
        (struct entry){d->minor_seq, d->last_pause_ns,
                       LOAD_RELAXED(&d->stats.promoted_words), part_words(d)};
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

/* One run of the scenario; crowded: the runtime believes it has one
   processor for its two domains.  Returns false when, crowded, domain 0's
   recorded pause was under half of domain 1's: it does not count the wait
   (the caller tries again, up to 5 times).  When the pause counted from
   domain 0's own start, a domain 0 that the scheduler kept off the
   processors from the enter barrier through domain 1's promotion recorded
   about 115 us against domain 1's 655 us in all 5 tries, beside other
   loads (6 runs of 12, compaction mode); counted from the barrier's
   release (DESIGN §5.8), 0 of 20 in the same conditions. */
static bool scenario(bool crowded) {
  bool counted = true;
  const char *mode = crowded ? "crowded" : "not crowded";
  atomic_store(&phase, 0);
  atomic_store(&go, 0);
  atomic_store(&list_good, 0);
  logged[0] = logged[1] = 0;
  /* Read by domains only after the spawn (ordered by it). */
  mgc_rt.cpus = crowded ? 1 : 2;
  mgc_params p;
  mgc_get_params(&p);
  p.minor_pause_goal_us = 0;
  CHECK(mgc_set_params(&p) == MGC_OK, "no goal");
  struct mgc_dom *d0 = mgc_self();
  mgc_minor_collection();
  size_t full = part_words(d0);
  CHECK(full == HEAP_WORDS, "%s, no goal: the whole heap in use (%zu)", mode,
        full);
  mgc_set_minor_gc_begin_hook(begin_hook);
  mgc_domain *h = mgc_domain_spawn(builder, MGC_UNIT);
  CHECK(h != NULL, "spawn: %s", mgc_strerror(mgc_last_error()));
  if (!h)
    return true;
  CHECK(mgc_crowded() == crowded, "%s: mgc_crowded() says %d", mode,
        (int)mgc_crowded());
  /* Take part in domain 1's collections, with nothing young. */
  atomic_store(&go, 1);
  while (!atomic_load(&phase))
    mgc_poll();
  log_domain(d0, 0);
  mgc_domain_join(h);
  mgc_set_minor_gc_begin_hook(NULL);
  /* Domain 1's collection that promoted the list: the one that promoted
     most (not the longest pause: crowded, a pause counts the time the
     scheduler took the processor away, and an empty collection may be
     the longest). */
  struct entry *big = NULL;
  uint64_t most = 0;
  for (int k = 0; k < logged[1]; k++) {
    uint64_t before = k ? logs[1][k - 1].promoted : 0;
    if (!big || logs[1][k].promoted - before > most) {
      big = &logs[1][k];
      most = logs[1][k].promoted - before;
    }
  }
  struct entry *e0 = big ? find(0, big->seq) : NULL;
  CHECK(big && e0,
        "%s: domain 0 took part in domain 1's big collection "
        "(%d and %d logged)",
        mode, logged[0], logged[1]);
  CHECK(atomic_load(&list_good), "%s: domain 1's list survived intact", mode);
  mgc_params now;
  mgc_get_params(&now);
  /* Under torture every allocation collects: there is no big one. */
  if (big && e0 && now.torture_every == 0) {
    if (!crowded) {
      CHECK(e0->pause < big->pause,
            "domain 0's pause leaves out the wait (%.1f us, domain 1's "
            "%.1f us)",
            e0->pause / 1e3, big->pause / 1e3);
      if (e0->pause < GOAL_US * 500ull)
        CHECK(e0->part == full,
              "domain 0, own pause %.1f us: whole part kept (%zu of %zu)",
              e0->pause / 1e3, e0->part, full);
    } else {
      counted = e0->pause >= big->pause / 2;
      if (!counted)
        printf("crowded: domain 0's pause %.1f us, under half of domain "
               "1's %.1f us: another try\n",
               e0->pause / 1e3, big->pause / 1e3);
      if (e0->pause > GOAL_US * 1000ull)
        CHECK(e0->part < full,
              "crowded: domain 0, pause %.1f us over the goal: part "
              "shrunk (%zu of %zu)",
              e0->pause / 1e3, e0->part, full);
    }
    if (big->pause > GOAL_US * 1000ull)
      CHECK(big->part < full,
            "%s: domain 1, pause %.1f us over the goal: part shrunk (%zu "
            "of %zu)",
            mode, big->pause / 1e3, big->part, full);
    printf("%s: domain 0 pause %.1f us, part %zu; domain 1 pause %.1f us, "
           "part %zu (of %zu)\n",
           mode, e0->pause / 1e3, e0->part, big->pause / 1e3, big->part, full);
  }
  CHECK(mgc_verify_heap() == 0, "%s: heap verifies", mode);
  return counted;
}

/* A domain that only waits for its release, polling. */
static atomic_int released;
static mgc_value idler(mgc_value arg) {
  (void)arg;
  while (!atomic_load(&released))
    mgc_poll();
  return MGC_UNIT;
}

/* A domain in a blocking section does not count as running: with one
   processor and two domains, crowded, unless one of them blocks. */
static void blocking_not_counted(void) {
  atomic_store(&released, 0);
  mgc_rt.cpus = 1; /* read by domains only after the spawn */
  mgc_domain *h = mgc_domain_spawn(idler, MGC_UNIT);
  CHECK(h != NULL, "spawn: %s", mgc_strerror(mgc_last_error()));
  if (!h)
    return;
  CHECK(mgc_crowded(), "two running domains, one processor: crowded");
  mgc_enter_blocking_section();
  CHECK(!mgc_crowded(), "one of them blocking: not crowded");
  mgc_leave_blocking_section();
  CHECK(mgc_crowded(), "back from the blocking section: crowded");
  atomic_store(&released, 1);
  mgc_domain_join(h);
  CHECK(!mgc_crowded(), "joined: one domain, not crowded");
}

int main(void) {
  mt_watchdog(300);
  mgc_params p;
  mgc_params_default(&p);
  p.minor_heap_words = HEAP_WORDS;
  p.minor_pause_goal_us = 0;
  CHECK(mgc_init(&p) == MGC_OK, "init");
  CHECK(mgc_rt.cpus >= 1, "init read the processor count (%zu)", mgc_rt.cpus);
  CHECK(!mgc_crowded(), "one domain is never crowded");
  bool counted = false;
  for (int tries = 0; tries < 5 && !counted; tries++)
    counted = scenario(true);
  CHECK(counted, "crowded: domain 0's pause counts the wait (5 tries)");
  scenario(false);
  blocking_not_counted();
  mgc_shutdown();
  return check_done();
}
