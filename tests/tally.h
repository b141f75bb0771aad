/* tally.h: many checks summarised by one CHECK, the first failures printed
 * (test_compact, test_fibers, test_domains_fibers, test_domains_weak).
 * Include after check.h, or after check_mt.h: then a failure prints under
 * check_mt_lock and tally_report names the domain and uses MT_CHECK.
 *
 *   struct tally t = {0, 0};
 *   EXPECT(&t, cond, "fmt", ...);   counted; the first 8 failures printed
 *   tally_report(&t, "what");       one CHECK: no failure, at least one check
 *   tally_report(&t, "what", dom);  (with check_mt.h)
 */
#ifndef MGC_TEST_TALLY_H
#define MGC_TEST_TALLY_H

#include <stdarg.h>
#include <stdio.h>

struct tally {
  long checks;
  long bad;
};

static void tally_fail(struct tally *t, const char *file, int line,
                       const char *cond, const char *fmt, ...) {
  char buf[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  t->bad++;
  if (t->bad > 8)
    return;
#ifdef MGC_TEST_CHECK_MT_H
  pthread_mutex_lock(&check_mt_lock);
#endif
  check_at(file, line, 0, cond, "%s", buf);
#ifdef MGC_TEST_CHECK_MT_H
  pthread_mutex_unlock(&check_mt_lock);
#endif
}

#define EXPECT(t, cond, ...)                                                   \
  do {                                                                         \
    (t)->checks++;                                                             \
    if (!(cond))                                                               \
      tally_fail((t), __FILE__, __LINE__, #cond, __VA_ARGS__);                 \
  } while (0)

#ifdef MGC_TEST_CHECK_MT_H
static void tally_report(struct tally *t, const char *what, int dom) {
  MT_CHECK(t->bad == 0 && t->checks > 0, "%s, domain %d: %ld of %ld failed",
           what, dom, t->bad, t->checks);
}
#else
static void tally_report(struct tally *t, const char *what) {
  CHECK(t->bad == 0 && t->checks > 0, "%s: %ld of %ld checks failed", what,
        t->bad, t->checks);
}
#endif

#endif
