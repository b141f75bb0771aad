/* test_domains_events.c: a reader that is not a domain reads the event
 * rings of two busy domains while they collect, without stopping them.
 *
 * Checks: every event read is well formed (kind, name, its slot) and each
 * slot's events come in time order; both slots are seen; events lost to a
 * ring of 1024 are counted, never returned torn; until a slot loses
 * events, its span ends never outnumber its begins (after a loss the
 * nesting is unknown and no longer checked for that slot).  Under TSan this is
 * the ring protocol's race check.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "check_mt.h"

static atomic_int running;
static long rounds;

struct reader_result {
  long events[2], lost[2], malformed, unordered, bad_nest, nest_checked;
};

static void *reader(void *arg) {
  struct reader_result *res = arg;
  uint64_t cursor[2] = {0, 0}, last_t[2] = {0, 0};
  int depth[2] = {0, 0};
  mgc_event buf[128];
  while (atomic_load(&running)) {
    for (int s = 0; s < 2; s++) {
      uint64_t lost = 0;
      size_t n = mgc_events_read(s, &cursor[s], buf, 128, &lost);
      res->lost[s] += (long)lost;
      if (lost)
        depth[s] = -1; /* unknown from now on */
      for (size_t i = 0; i < n; i++) {
        mgc_event *e = &buf[i];
        res->events[s]++;
        res->malformed += e->domain != s || e->kind < 1 || e->kind > 3 ||
                          e->name >= MGC_EVN_COUNT;
        res->unordered += e->time_ns < last_t[s];
        last_t[s] = e->time_ns;
        if (depth[s] < 0)
          continue;
        res->nest_checked++;
        if (e->kind == MGC_EV_BEGIN)
          depth[s]++;
        else if (e->kind == MGC_EV_END && --depth[s] < 0)
          res->bad_nest++;
      }
    }
  }
  return NULL;
}

static void churn(long n) {
  MGC_PARAM0;
  MGC_LOCAL1(keep);
  keep = mgc_alloc(64, 0);
  for (long i = 0; i < n; i++) {
    mgc_value b = mgc_alloc_small(4, 0);
    for (int j = 0; j < 4; j++)
      MGC_FIELD(b, j) = MGC_VAL_INT(i);
    if (i % 97 == 0)
      mgc_modify(&MGC_FIELD(keep, (size_t)i % 64), b);
    if (i % 5000 == 0)
      mgc_major_slice(0);
  }
  MGC_RETURN0;
}

static mgc_value worker(mgc_value arg) {
  churn(rounds);
  return arg;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  mt_watchdog(120);
  mgc_params p;
  mgc_params_default(&p);
  p.event_ring_size = 1024;
  p.minor_heap_words = 4096;
  MT_CHECK(mgc_init(&p) == 0, "init");
  mgc_set_fatal_handler(check_fatal_handler);
  rounds = test_scale(400000);
  struct reader_result res;
  memset(&res, 0, sizeof res);
  atomic_store(&running, 1);
  pthread_t th;
  MT_CHECK(pthread_create(&th, NULL, reader, &res) == 0, "reader thread");
  mgc_domain *d = mgc_domain_spawn(worker, MGC_VAL_INT(1));
  MT_CHECK(d != NULL, "spawn");
  churn(rounds);
  mgc_domain_join(d);
  mgc_full_major();
  atomic_store(&running, 0);
  pthread_join(th, NULL);
  printf("slot 0: %ld events, %ld lost; slot 1: %ld events, %ld lost\n",
         res.events[0], res.lost[0], res.events[1], res.lost[1]);
  MT_CHECK(res.events[0] > 0 && res.events[1] > 0,
           "events of both domains were read");
  MT_CHECK(res.malformed == 0, "%ld malformed events", res.malformed);
  MT_CHECK(res.unordered == 0, "%ld events out of time order", res.unordered);
  MT_CHECK(res.bad_nest == 0, "%ld span ends without a begin", res.bad_nest);
  mgc_shutdown();
  return check_done();
}
