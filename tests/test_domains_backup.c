/* test_domains_backup.c: when a domain's backup thread is woken.
 *
 * DESIGN.md §4.4.  A collection interrupts every domain; a running domain
 * serves the interrupt itself at its next poll, and only a domain inside
 * a blocking section needs its backup thread.  Waking the backup thread
 * of a running domain put it on that domain's processor for nothing, once
 * per interrupt.  Checks:
 *   part A: domain 1 runs and polls while domain 0 performs many minor
 *           collections and major slices, each of which interrupts it: its
 *           backup thread wakes at most a couple of times (a condition
 *           variable may wake spuriously), not once per interrupt; every
 *           collection completed with domain 1 taking part itself, and its
 *           rooted list is intact;
 *   part B: domain 1 then sleeps inside a blocking section while domain 0
 *           collects: those collections complete while it sleeps, served
 *           by its backup thread, which was woken for them; the list is
 *           intact after it leaves.  (Those collections could not end
 *           at all without it: the test would hang, and the watchdog
 *           would fail it.)
 * The wake-ups are counted by the domain (backup_wakeups, under its
 * intr_lock).  Run under ThreadSanitizer by `make test` (test-tsan).
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"

#include "../src/internal.h"
#include "lists.h"

#include <stdio.h>
#include <time.h>

#define COLLECTIONS 200
#define LIST_LEN 300

static _Atomic(struct mgc_dom *) dom1;
/* 0: domain 1 starting; 1: it polls (part A); 2: part A's collections
   done; 3: it is inside its blocking section (part B); 4: part B's
   collections done; 5: it left and checked its list. */
static atomic_int stage;

static uint64_t wakeups(struct mgc_dom *d) {
  pthread_mutex_lock(&d->intr_lock);
  uint64_t n = d->backup_wakeups;
  pthread_mutex_unlock(&d->intr_lock);
  return n;
}

static void wait_stage(int s) {
  while (atomic_load(&stage) < s)
    mgc_poll();
}

static mgc_value worker(mgc_value arg) {
  (void)arg;
  MGC_PARAM0;
  MGC_LOCAL1(list);
  list = make_list(LIST_LEN);
  atomic_store(&dom1, mgc_self());
  atomic_store(&stage, 1);
  /* Part A: running, polling, a few allocations between polls. */
  while (atomic_load(&stage) < 2) {
    mgc_poll();
    (void)mgc_alloc_small(2, 0);
  }
  MT_CHECK(list_ok(list, LIST_LEN), "part A: the list is intact");
  /* Part B: asleep in a blocking section until domain 0 is done. */
  mgc_enter_blocking_section();
  atomic_store(&stage, 3);
  while (atomic_load(&stage) < 4) {
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
  }
  mgc_leave_blocking_section();
  MT_CHECK(list_ok(list, LIST_LEN), "part B: the list is intact");
  MGC_DROP;
  atomic_store(&stage, 5);
  return MGC_UNIT;
}

static void run(void) {
  mgc_domain *h = mgc_domain_spawn(worker, MGC_UNIT);
  if (!CHECK(h != NULL, "spawn: %s", mgc_strerror(mgc_last_error())))
    return;
  wait_stage(1);
  struct mgc_dom *d1 = atomic_load(&dom1);
  mgc_stats s0, s1;
  mgc_get_stats(&s0);
  uint64_t before = wakeups(d1);
  for (int i = 0; i < COLLECTIONS; i++) {
    mgc_minor_collection();
    if (i % 4 == 0)
      mgc_major_slice(1000);
  }
  uint64_t after = wakeups(d1);
  mgc_get_stats(&s1);
  CHECK(s1.minor_collections - s0.minor_collections >= COLLECTIONS,
        "part A: %d collections ran (%llu)", COLLECTIONS,
        (unsigned long long)(s1.minor_collections - s0.minor_collections));
  CHECK(after - before <= 2,
        "part A: a running domain's backup thread stays asleep through %d "
        "interrupts (woken %llu times)",
        COLLECTIONS, (unsigned long long)(after - before));
  atomic_store(&stage, 2);
  wait_stage(3);
  before = wakeups(d1);
  /* Written by whoever serves domain 1 in each collection, before the
     promotion barrier that domain 0 passes after it. */
  uint64_t seq = d1->minor_seq;
  for (int i = 0; i < 20; i++)
    mgc_minor_collection();
  mgc_major_collection();
  after = wakeups(d1);
  CHECK(d1->minor_seq >= seq + 20,
        "part B: domain 1 took part in the collections while asleep "
        "(%llu to %llu)",
        (unsigned long long)seq, (unsigned long long)d1->minor_seq);
  CHECK(after - before >= 1,
        "part B: the sleeping domain's backup thread was woken (%llu)",
        (unsigned long long)(after - before));
  atomic_store(&stage, 4);
  mgc_domain_join(h);
  CHECK(atomic_load(&stage) == 5, "domain 1 finished");
  CHECK(mgc_verify_heap() == 0, "heap verifies");
}

int main(void) {
  mt_watchdog(300);
  mgc_set_fatal_handler(check_fatal_handler);
  mgc_params p;
  mgc_params_default(&p);
  p.max_domains = 2;
  if (!CHECK(mgc_init(&p) == MGC_OK, "mgc_init"))
    return check_done();
  run();
  mgc_shutdown();
  return check_mt_done();
}
