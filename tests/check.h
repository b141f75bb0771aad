/* check.h: the tiny harness every mgc test program includes.
 *
 * CHECK(cond, fmt, ...) counts one check; a failure prints the file, line,
 * condition and the formatted message (passes are printed too when
 * MGC_TEST_VERBOSE is set).  check_done() prints the one summary line
 * "N passed, N failed" and returns the exit status (1 if anything failed).
 * test_scale(n) divides a workload size by MGC_TEST_SCALE (default 1, result
 * at least 1), so that the whole suite can run under torture mode.
 * test_seed() picks a random seed (argv[1], else MGC_TEST_SEED, else the
 * given default), prints "seed: N" and seeds test_rand().
 */
#ifndef MGC_TEST_CHECK_H
#define MGC_TEST_CHECK_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "mgc.h"

static long check_passed_count;
static long check_failed_count;
static uint64_t check_rand_state = 88172645463325252ULL;

static inline int check_verbose(void) {
  const char *e = getenv("MGC_TEST_VERBOSE");
  return e != NULL && e[0] != '\0' && e[0] != '0';
}

static inline int check_at(const char *file, int line, int ok, const char *cond,
                           const char *fmt, ...) {
  if (ok) {
    check_passed_count++;
    if (check_verbose()) {
      va_list ap;
      printf("ok   %s:%d: ", file, line);
      va_start(ap, fmt);
      vprintf(fmt, ap);
      va_end(ap);
      printf("\n");
    }
  } else {
    va_list ap;
    check_failed_count++;
    printf("FAIL %s:%d: (%s) ", file, line, cond);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    printf("\n");
    fflush(stdout);
  }
  return ok;
}

/* Evaluates to cond (0 or 1) so a test can stop early when it matters. */
#define CHECK(cond, ...)                                                       \
  check_at(__FILE__, __LINE__, (cond) ? 1 : 0, #cond, __VA_ARGS__)

/* The heap verifier must find nothing wrong. */
#define CHECK_VERIFY(where)                                                    \
  CHECK(mgc_verify_heap() == 0, "mgc_verify_heap at %s", (where))

static inline int check_done(void) {
  printf("%ld passed, %ld failed\n", check_passed_count, check_failed_count);
  fflush(stdout);
  return check_failed_count != 0;
}

/* Fatal errors in a test are failures: print the message and the counts so
   far before the library aborts. */
static inline void check_fatal_handler(const char *msg) {
  check_failed_count++;
  printf("FATAL from mgc: %s\n", msg);
  check_done();
}

static inline long test_scale(long n) {
  const char *e = getenv("MGC_TEST_SCALE");
  long d = e != NULL ? strtol(e, NULL, 10) : 1;
  long r;
  if (d < 1)
    d = 1;
  r = n / d;
  return r < 1 ? 1 : r;
}

/* xorshift64*: small, fast and the same on every platform. */
static inline uint64_t test_rand(void) {
  uint64_t x = check_rand_state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  check_rand_state = x;
  return x * 2685821657736338717ULL;
}

/* Uniform enough in [0, n) for tests; n > 0. */
static inline uint64_t test_rand_below(uint64_t n) {
  return (test_rand() >> 11) % n;
}

static inline uint64_t test_seed(int argc, char **argv, uint64_t dflt) {
  uint64_t seed = dflt;
  const char *e = getenv("MGC_TEST_SEED");
  if (argc > 1 && argv[1][0] != '\0')
    seed = strtoull(argv[1], NULL, 0);
  else if (e != NULL && e[0] != '\0')
    seed = strtoull(e, NULL, 0);
  printf("seed: %llu\n", (unsigned long long)seed);
  fflush(stdout);
  check_rand_state = seed * 0x9E3779B97F4A7C15ULL + 0x2545F4914F6CDD1DULL;
  if (check_rand_state == 0)
    check_rand_state = 1;
  return seed;
}

#endif /* MGC_TEST_CHECK_H */
