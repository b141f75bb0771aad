/* test_domains_blocking.c: collections while a domain is blocked.
 *
 * DESIGN.md §4.4 (backup threads and blocking sections) and the
 * major_gc_wait_backup / backup_thread_pipe tests of §9:
 *   part A: a domain holding young values (rooted) blocks in read() on a
 *           pipe inside a blocking section while domain 0 performs hundreds
 *           of minor collections, major slices and full majors; they must
 *           all complete while the reader is still blocked (counted before
 *           the pipe is written, the reader still blocked).  Then the pipe
 *           is written; the reader leaves the blocking section and its
 *           values are intact and were promoted meanwhile.  The round is
 *           repeated with freshly spawned readers, some right after a domain
 *           slot was freed and reused.
 *   part B: the same with a domain sleeping (nanosleep) inside a blocking
 *           section, the collections coming from a third domain while
 *           domain 0 waits in mgc_domain_join.
 *   part C: mgc_get_stats reports stop-the-world latency figures after
 *           collections with two domains (their existence, not their
 *           values).
 */
#define _POSIX_C_SOURCE 200809L

#include "check_mt.h"

#include <errno.h>
#include <stdio.h>
#include <time.h>

#define SEED 99u
#define LIST_LEN 200

/* Reader/sleeper states. */
#define ST_STARTED 1
#define ST_BLOCKING 2 /* inside the blocking section, about to block */
#define ST_WOKEN 3    /* the blocking call returned */
#define ST_DONE 4     /* left the blocking section and checked */

/* Under torture mode (t=N) every allocation may collect, so values are
   seldom still young when a test looks at them. */
static int torture_on(void) {
  mgc_params p;
  mgc_get_params(&p);
  return p.torture_every != 0;
}

static atomic_long blocked_state;
static atomic_long collections_done;
static atomic_int sleeper_stop;
static int pipe_fds[2];
static uint64_t seed;

/* ------------------------------------------------------------------------ */
/* Values held across the blocking section                                  */
/* ------------------------------------------------------------------------ */

static mgc_value build_list(long salt) {
  MGC_PARAM0;
  MGC_LOCAL1(l);
  long i;
  for (i = LIST_LEN; i >= 1; i--) {
    mgc_value c = mgc_alloc_small(2, 0);
    MGC_FIELD(c, 0) = MGC_VAL_INT(i * salt);
    MGC_FIELD(c, 1) = l;
    l = c;
  }
  MGC_RETURN(l);
}

static int list_ok(mgc_value l, long salt) {
  long i;
  for (i = 1; i <= LIST_LEN; i++) {
    if (!MGC_IS_BLOCK(l) || MGC_FIELD(l, 0) != MGC_VAL_INT(i * salt) ||
        mgc_is_young(l))
      return 0;
    l = MGC_FIELD(l, 1);
  }
  return l == MGC_UNIT;
}

/* The body of a blocked domain: arg = [salt, mode], mode 0 = read() on the
   pipe, 1 = nanosleep until sleeper_stop.  Returns the number of broken
   values (0). */
static mgc_value blocked_body(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL3(l, s, b);
  long salt = MGC_INT_VAL(MGC_FIELD(arg, 0));
  long mode = MGC_INT_VAL(MGC_FIELD(arg, 1));
  long seen_collections, bad = 0;
  char text[64];
  int was_young;
  uintptr_t before;
  snprintf(text, sizeof text, "held across blocking %ld", salt);
  l = build_list(salt);
  s = mgc_copy_string(text);
  b = mgc_alloc_small(3, 7);
  MGC_FIELD(b, 0) = l;
  MGC_FIELD(b, 1) = s;
  MGC_FIELD(b, 2) = arg;
  was_young = mgc_is_young(l) && mgc_is_young(s) && mgc_is_young(b);
  before = (uintptr_t)b;
  atomic_store_explicit(&blocked_state, ST_STARTED, memory_order_release);

  mgc_enter_blocking_section();
  atomic_store_explicit(&blocked_state, ST_BLOCKING, memory_order_release);
  if (mode == 0) {
    char c;
    ssize_t n;
    do
      n = read(pipe_fds[0], &c, 1);
    while (n < 0 && errno == EINTR);
    bad += n != 1;
  } else {
    struct timespec ts = {0, 1000000};
    while (!atomic_load_explicit(&sleeper_stop, memory_order_acquire))
      nanosleep(&ts, NULL);
  }
  atomic_store_explicit(&blocked_state, ST_WOKEN, memory_order_release);
  mgc_leave_blocking_section();

  seen_collections =
      atomic_load_explicit(&collections_done, memory_order_acquire);
  bad += !list_ok(l, salt);
  bad += !MGC_IS_BLOCK(s) || mgc_is_young(s) ||
         strcmp(MGC_STRING_VAL(s), text) != 0 ||
         mgc_string_length(s) != strlen(text);
  bad += !MGC_IS_BLOCK(b) || mgc_is_young(b) || MGC_FIELD(b, 0) != l ||
         MGC_FIELD(b, 1) != s || MGC_FIELD(b, 2) != arg;
  bad += mgc_is_young(arg) || MGC_FIELD(arg, 0) != MGC_VAL_INT(salt);
  MT_CHECK(was_young || torture_on(),
           "mode %ld: the held values were young before "
           "blocking",
           mode);
  MT_CHECK(bad == 0 && (uintptr_t)b != before,
           "mode %ld, salt %ld: values held across the blocking section are "
           "intact and promoted (%ld broken, moved: %d)",
           mode, salt, bad, (uintptr_t)b != before);
  MT_CHECK(seen_collections > 0,
           "mode %ld: %ld collections were done while blocked", mode,
           seen_collections);
  atomic_store_explicit(&blocked_state, ST_DONE, memory_order_release);
  MGC_RETURN(MGC_VAL_INT(bad));
}

/* A short-lived domain whose slot the next reader may reuse. */
static mgc_value churn_body(mgc_value arg) {
  MGC_PARAM1(arg);
  MGC_LOCAL1(l);
  l = build_list(MGC_INT_VAL(MGC_FIELD(arg, 0)));
  mgc_enter_blocking_section();
  mgc_leave_blocking_section();
  MGC_RETURN(MGC_VAL_INT(MGC_FIELD(l, 0) ==
                         MGC_VAL_INT(MGC_INT_VAL(MGC_FIELD(arg, 0)))));
}

static mgc_value make_arg(long salt, long mode) {
  mgc_value a = mgc_alloc_small(2, 0);
  MGC_FIELD(a, 0) = MGC_VAL_INT(salt);
  MGC_FIELD(a, 1) = MGC_VAL_INT(mode);
  return a;
}

/* ------------------------------------------------------------------------ */
/* The collections                                                          */
/* ------------------------------------------------------------------------ */

/* minors minor collections, with a major slice after every 4th and a full
   major after every 10th; returns how many times the blocked domain was
   seen still blocked after a collection (all of them, if nothing waits
   for it). */
static long collect_while_blocked(long minors, struct mt_rng *rng) {
  MGC_PARAM0;
  MGC_LOCAL1(keep);
  long i, still_blocked = 0;
  keep = make_arg(-1, -1);
  for (i = 0; i < minors; i++) {
    (void)mgc_alloc(1 + (size_t)mt_below(rng, 30), 0);
    mgc_minor_collection();
    if (i % 4 == 3)
      mgc_major_slice(0);
    if (i % 10 == 9)
      mgc_full_major();
    atomic_fetch_add_explicit(&collections_done, 1, memory_order_release);
    still_blocked += atomic_load_explicit(&blocked_state,
                                          memory_order_acquire) == ST_BLOCKING;
  }
  MT_CHECK(MGC_FIELD(keep, 0) == MGC_VAL_INT(-1) && !mgc_is_young(keep),
           "the collector's own root survived");
  MGC_RETURN(still_blocked);
}

static void wait_state(long want) {
  unsigned long spins = 0;
  while (atomic_load_explicit(&blocked_state, memory_order_acquire) != want)
    mt_relax(&spins);
}

/* Part A: one reader round; churn spawns and joins a short-lived domain
   first, so that the reader may reuse its slot. */
static void part_a_round(long round, long minors, int churn,
                         struct mt_rng *rng) {
  MGC_PARAM0;
  MGC_LOCAL2(arg, res);
  mgc_domain *d;
  mgc_stats st0, st1;
  long still_blocked;
  char c = 'x';
  if (churn) {
    arg = make_arg(round, 2);
    d = mgc_domain_spawn(churn_body, arg);
    MT_CHECK(d != NULL, "churn spawn, round %ld", round);
    if (d != NULL) {
      res = mgc_domain_join(d);
      MT_CHECK(res == MGC_VAL_INT(1), "churn domain, round %ld", round);
    }
  }
  atomic_store(&blocked_state, 0);
  atomic_store(&collections_done, 0);
  arg = make_arg(round + 2, 0);
  d = mgc_domain_spawn(blocked_body, arg);
  if (!CHECK(d != NULL, "spawn reader, round %ld", round))
    exit(check_mt_done());
  wait_state(ST_BLOCKING);
  mgc_get_stats(&st0);
  still_blocked = collect_while_blocked(minors, rng);
  mgc_get_stats(&st1);
  MT_CHECK(still_blocked == minors &&
               atomic_load(&blocked_state) == ST_BLOCKING,
           "part A round %ld: %ld collections completed while the reader "
           "was blocked in read() (blocked after %ld of them)",
           round, minors, still_blocked);
  MT_CHECK(st1.minor_collections - st0.minor_collections >= (uint64_t)minors,
           "part A round %ld: %llu minor collections counted", round,
           (unsigned long long)(st1.minor_collections - st0.minor_collections));
  if (write(pipe_fds[1], &c, 1) != 1)
    MT_CHECK(0, "write to the pipe");
  res = mgc_domain_join(d);
  MT_CHECK(res == MGC_VAL_INT(0) && atomic_load(&blocked_state) == ST_DONE,
           "part A round %ld: the reader finished cleanly", round);
  MGC_DROP;
}

/* Part B: the collector domain. */
static mgc_value collector_body(mgc_value arg) {
  MGC_PARAM1(arg);
  struct mt_rng rng;
  long minors = MGC_INT_VAL(arg), still;
  mt_rng_seed(&rng, seed, 7);
  wait_state(ST_BLOCKING);
  still = collect_while_blocked(minors, &rng);
  MT_CHECK(still == minors,
           "part B: %ld collections completed while the "
           "sleeper slept (sleeping after %ld)",
           minors, still);
  atomic_store_explicit(&sleeper_stop, 1, memory_order_release);
  MGC_RETURN(MGC_VAL_INT(still));
}

static void run(void) {
  MGC_PARAM0;
  MGC_LOCAL2(arg, res);
  struct mt_rng rng;
  mgc_domain *sleeper, *collector;
  mgc_stats st;
  long r, rounds = test_scale(12);
  mt_rng_seed(&rng, seed, 0);

  part_a_round(0, test_scale(400), 0, &rng);
  mgc_get_stats(&st);
  printf("stw latency: max %llu ns, p50 %llu ns, p99 %llu ns\n",
         (unsigned long long)st.stw_latency_max_ns,
         (unsigned long long)st.stw_latency_p50_ns,
         (unsigned long long)st.stw_latency_p99_ns);
  MT_CHECK(st.stw_latency_max_ns > 0,
           "part C: stw_latency_max_ns is reported after collections with "
           "two domains");
  MT_CHECK(st.stw_latency_p50_ns <= st.stw_latency_p99_ns,
           "part C: stw latency p50 <= p99");
  for (r = 1; r <= rounds; r++)
    part_a_round(r, test_scale(40), (int)(r % 2), &rng);

  atomic_store(&blocked_state, 0);
  atomic_store(&collections_done, 0);
  atomic_store(&sleeper_stop, 0);
  arg = make_arg(1000, 1);
  sleeper = mgc_domain_spawn(blocked_body, arg);
  arg = MGC_VAL_INT(test_scale(300));
  collector = mgc_domain_spawn(collector_body, arg);
  if (!CHECK(sleeper != NULL && collector != NULL, "part B spawns"))
    exit(check_mt_done());
  res = mgc_domain_join(collector);
  MT_CHECK(res == MGC_VAL_INT(test_scale(300)), "part B: collector result");
  res = mgc_domain_join(sleeper);
  MT_CHECK(res == MGC_VAL_INT(0), "part B: the sleeper finished cleanly");
  MT_CHECK(mgc_verify_heap() == 0, "verify at the end");
  MGC_DROP;
}

int main(int argc, char **argv) {
  mgc_params p;
  mt_watchdog(600);
  seed = test_seed(argc, argv, SEED);
  if (pipe(pipe_fds) != 0) {
    perror("pipe");
    return 1;
  }
  mgc_set_fatal_handler(check_fatal_handler);
  mgc_params_default(&p);
  p.max_domains = 4;
  p.minor_heap_words = 16384;
  if (!CHECK(mgc_init(&p) == 0, "mgc_init"))
    return check_done();
  run();
  mgc_shutdown();
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  return check_mt_done();
}
