/* check_mt.h: check.h made usable from several domains at once.
 *
 * check.h keeps plain counters and one global random state; the multi-domain
 * tests (tests/test_domains*.c) call their checks from every domain, so this
 * header adds:
 *   MT_CHECK(cond, fmt, ...)  CHECK under a mutex.  The condition is
 *                              evaluated before the mutex is taken, so it may
 *                              call into mgc (a stop-the-world collection
 *                              never waits on a domain holding the mutex).
 *   struct mt_rng              a per-domain xorshift64* generator.
 *   struct mt_barrier          a reusable barrier for n domains whose waiters
 *                              spin with mgc_poll(), so that collections
 *                              requested meanwhile still complete.
 *   mt_watchdog(seconds)       turns a deadlock into a clear failure.
 */
#ifndef MGC_TEST_CHECK_MT_H
#define MGC_TEST_CHECK_MT_H

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static pthread_mutex_t check_mt_lock = PTHREAD_MUTEX_INITIALIZER;

/* One check from any domain; evaluates to nothing. */
#define MT_CHECK(cond, ...)                                                    \
  do {                                                                         \
    int mt_ok_ = (cond) ? 1 : 0;                                               \
    pthread_mutex_lock(&check_mt_lock);                                        \
    check_at(__FILE__, __LINE__, mt_ok_, #cond, __VA_ARGS__);                  \
    pthread_mutex_unlock(&check_mt_lock);                                      \
  } while (0)

static inline int check_mt_done(void) {
  int r;
  pthread_mutex_lock(&check_mt_lock);
  r = check_done();
  pthread_mutex_unlock(&check_mt_lock);
  return r;
}

static inline long check_mt_failed(void) {
  long r;
  pthread_mutex_lock(&check_mt_lock);
  r = check_failed_count;
  pthread_mutex_unlock(&check_mt_lock);
  return r;
}

/* ------------------------------------------------------------------------ */
/* Per-domain random numbers                                                */
/* ------------------------------------------------------------------------ */

struct mt_rng {
  uint64_t s;
};

static inline void mt_rng_seed(struct mt_rng *r, uint64_t seed,
                               uint64_t stream) {
  r->s = (seed + stream * 0xD1B54A32D192ED03ULL) * 0x9E3779B97F4A7C15ULL +
         0x2545F4914F6CDD1DULL;
  if (r->s == 0)
    r->s = 1;
}

static inline uint64_t mt_rand(struct mt_rng *r) {
  uint64_t x = r->s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  r->s = x;
  return x * 2685821657736338717ULL;
}

/* In [0, n); n > 0. */
static inline uint64_t mt_below(struct mt_rng *r, uint64_t n) {
  return (mt_rand(r) >> 11) % n;
}

/* ------------------------------------------------------------------------ */
/* Waiting without stalling the collector                                   */
/* ------------------------------------------------------------------------ */

/* A domain spinning here answers stop-the-world requests through
   mgc_poll(); the yield keeps oversubscribed machines (and TSan) moving. */
static inline void mt_relax(unsigned long *spins) {
  mgc_poll();
  if ((++*spins & 63) == 0)
    sched_yield();
}

/* Waits until *flag >= want (acquire). */
static inline void mt_wait_at_least(atomic_long *flag, long want) {
  unsigned long spins = 0;
  while (atomic_load_explicit(flag, memory_order_acquire) < want)
    mt_relax(&spins);
}

struct mt_barrier {
  atomic_uint count;
  atomic_uint gen;
  unsigned n;
};

static inline void mt_barrier_init(struct mt_barrier *b, unsigned n) {
  atomic_init(&b->count, 0);
  atomic_init(&b->gen, 0);
  b->n = n;
}

/* Sense by generation: the last arriver resets the count and publishes the
   next generation with release order; the others acquire it.  Returns 1 in
   exactly one domain (the last arriver). */
static inline int mt_barrier_wait(struct mt_barrier *b) {
  unsigned g = atomic_load_explicit(&b->gen, memory_order_acquire);
  unsigned long spins = 0;
  if (atomic_fetch_add_explicit(&b->count, 1, memory_order_acq_rel) + 1 ==
      b->n) {
    atomic_store_explicit(&b->count, 0, memory_order_relaxed);
    atomic_store_explicit(&b->gen, g + 1, memory_order_release);
    return 1;
  }
  while (atomic_load_explicit(&b->gen, memory_order_acquire) == g)
    mt_relax(&spins);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Watchdog                                                                 */
/* ------------------------------------------------------------------------ */

static void mt_watchdog_fired(int sig) {
  static const char msg[] =
      "FAIL watchdog: test still running after its time limit (deadlock?)\n"
      "0 passed, 1 failed\n";
  ssize_t w;
  (void)sig;
  w = write(1, msg, sizeof msg - 1);
  (void)w;
  _exit(2);
}

/* Seconds of wall time before the program fails; MGC_TEST_TIMEOUT overrides
   (0 disables). */
static inline void mt_watchdog(unsigned seconds) {
  const char *e = getenv("MGC_TEST_TIMEOUT");
  if (e != NULL && e[0] != '\0')
    seconds = (unsigned)strtoul(e, NULL, 10);
  signal(SIGALRM, mt_watchdog_fired);
  alarm(seconds);
}

#endif /* MGC_TEST_CHECK_MT_H */
