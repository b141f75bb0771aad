/* Runtime events (DESIGN §7.1): one lossy ring per domain slot, and the
 * trace= writer that turns the rings into a JSON trace.
 *
 * A ring holds the last E events of its slot (E = the e= parameter, a
 * power of two).  Its writer is whoever holds the domain: the domain's
 * thread or its backup thread, never both (the domain lock), so writing
 * takes no lock.  Readers (mgc_events_read, the trace thread) run at any
 * time on any thread, without stopping anybody; an event overwritten
 * before a reader got to it is counted as lost, never returned torn.
 *
 * The protocol is a sequence lock over the whole ring:
 *   writer of event number h:  begin = h + 1 (relaxed); release fence;
 *                              the three words of slot h % E (relaxed);
 *                              end = h + 1 (release)
 *   reader of events [c, e):   e = end (acquire); read the slots
 *                              (relaxed); acquire fence; b = begin;
 *                              events numbered below b - E may have been
 *                              overwritten while we read them: dropped,
 *                              and those from e up to b - E (a writer
 *                              that lapped the ring meanwhile) skipped;
 *                              both are counted as lost.
 * If the reader saw any word a later writer stored, the fences order that
 * writer's store of begin before the reader's load of begin, so the
 * reader sees the overwrite announced and drops the event.
 *
 * The trace thread drains every ring every 20 ms into the file and closes
 * it (valid JSON) at shutdown or from the fatal handler path.
 */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ev_slot {
  _Atomic uint64_t time_ns;
  _Atomic uint64_t kind_name; /* kind << 32 | name */
  _Atomic uint64_t value;
};

struct mgc_ring {
  _Atomic uint64_t begin;
  _Atomic uint64_t end;
  uint64_t mask;
  struct ev_slot *slots;
};

/* Per slot, published with release by dom_prepare (mgc_events_ring_for). */
static _Atomic(struct mgc_ring *) *rings;
static size_t ring_count;
static uint64_t t0_ns;

static const char *const names[MGC_EVN_COUNT] = {
    [MGC_EVN_MINOR] = "minor",
    [MGC_EVN_MINOR_ROOTS] = "minor_roots",
    [MGC_EVN_MINOR_REMSET] = "minor_remset",
    [MGC_EVN_MINOR_MOPUP] = "minor_mopup",
    [MGC_EVN_MAJOR_SLICE] = "major_slice",
    [MGC_EVN_MARK] = "mark",
    [MGC_EVN_SWEEP] = "sweep",
    [MGC_EVN_CYCLE_END] = "cycle_end",
    [MGC_EVN_PHASE_CHANGE] = "phase_change",
    [MGC_EVN_MAJOR_FINISH] = "major_finish",
    [MGC_EVN_COMPACT] = "compact",
    [MGC_EVN_STW] = "stw",
    [MGC_EVN_BARRIER] = "barrier",
    [MGC_EVN_PROMOTED_WORDS] = "promoted_words",
    [MGC_EVN_HEAP_WORDS] = "heap_words",
    [MGC_EVN_REMEMBERED] = "remembered",
};

const char *mgc_event_name(unsigned name) {
  return name < MGC_EVN_COUNT ? names[name] : "unknown";
}

void mgc_events_init(size_t max_domains) {
  t0_ns = mgc_now_ns();
  ring_count = max_domains;
  rings = mgc_xcalloc(max_domains, sizeof *rings, "event rings");
}

/* A domain slot's ring, made the first time the slot is used (under
   all_domains_lock) and kept until shutdown: a later domain in the slot
   goes on writing it. */
struct mgc_ring *mgc_events_ring_for(int slot) {
  struct mgc_ring *r = LOAD_RELAXED(&rings[slot]);
  if (r || mgc_rt.params.event_ring_size == 0)
    return r;
  r = mgc_xcalloc(1, sizeof *r, "event ring");
  r->mask = mgc_rt.params.event_ring_size - 1;
  r->slots = mgc_xcalloc(mgc_rt.params.event_ring_size, sizeof *r->slots,
                         "event ring");
  STORE_RELEASE(&rings[slot], r);
  return r;
}

void mgc_ev(struct mgc_dom *d, unsigned kind, unsigned name, uint64_t value) {
  struct mgc_ring *r = d->ring;
  if (!r)
    return;
  uint64_t h = LOAD_RELAXED(&r->end);
  STORE_RELAXED(&r->begin, h + 1);
  atomic_thread_fence(memory_order_release);
  struct ev_slot *s = &r->slots[h & r->mask];
  STORE_RELAXED(&s->time_ns, mgc_now_ns() - t0_ns);
  STORE_RELAXED(&s->kind_name, (uint64_t)kind << 32 | name);
  STORE_RELAXED(&s->value, value);
  STORE_RELEASE(&r->end, h + 1);
}

size_t mgc_events_read(int domain, uint64_t *cursor, mgc_event *buf, size_t max,
                       uint64_t *lost) {
  if (lost)
    *lost = 0;
  if (!rings || domain < 0 || (size_t)domain >= ring_count || !cursor ||
      (max && !buf))
    return 0;
  struct mgc_ring *r = LOAD_ACQUIRE(&rings[domain]);
  if (!r)
    return 0;
  uint64_t cap = r->mask + 1;
  uint64_t e = LOAD_ACQUIRE(&r->end);
  uint64_t c = *cursor;
  if (c > e)
    c = e; /* a cursor from another run of the library */
  uint64_t dropped = 0;
  if (e - c > cap) {
    dropped += e - c - cap;
    c = e - cap;
  }
  if (e - c > max)
    e = c + max;
  size_t n = 0;
  for (uint64_t i = c; i < e; i++, n++) {
    struct ev_slot *s = &r->slots[i & r->mask];
    buf[n].time_ns = LOAD_RELAXED(&s->time_ns);
    uint64_t kn = LOAD_RELAXED(&s->kind_name);
    buf[n].kind = (unsigned)(kn >> 32);
    buf[n].name = (unsigned)(kn & 0xFFFFFFFFu);
    buf[n].value = LOAD_RELAXED(&s->value);
    buf[n].domain = domain;
  }
  atomic_thread_fence(memory_order_acquire);
  uint64_t b = LOAD_RELAXED(&r->begin);
  /* Events below b - cap may have been rewritten during our reads. */
  uint64_t first_safe = b > cap ? b - cap : 0;
  size_t skip = 0;
  if (first_safe > c) {
    skip = (size_t)(first_safe - c < n ? first_safe - c : n);
    dropped += skip;
    memmove(buf, buf + skip, (n - skip) * sizeof *buf);
    n -= skip;
  }
  /* A writer that lapped the ring while we read (first_safe beyond e):
     the events from e to first_safe are gone too, and counted. */
  if (first_safe > e)
    dropped += first_safe - e;
  *cursor = e > first_safe ? e : first_safe;
  if (lost)
    *lost = dropped;
  return n;
}

/* ------------------------------------------------------------------------ */
/* The trace= writer                                                        */
/* ------------------------------------------------------------------------ */

static FILE *trace_file;
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_t trace_thread;
static bool trace_thread_running;
static _Atomic bool trace_stop;
static uint64_t *trace_cursor; /* per slot, under trace_lock */
static uint64_t *trace_lost;
static bool *trace_named;
static uint64_t trace_lost_total;

#define DRAIN_BATCH 256

/* Under trace_lock. */
static void drain(void) {
  mgc_event buf[DRAIN_BATCH];
  for (size_t slot = 0; slot < ring_count; slot++) {
    if (!LOAD_ACQUIRE(&rings[slot]))
      continue;
    if (!trace_named[slot]) {
      trace_named[slot] = true;
      fprintf(trace_file,
              ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,"
              "\"tid\":%zu,\"args\":{\"name\":\"domain %zu\"}}",
              slot, slot);
    }
    for (;;) {
      uint64_t lost;
      size_t n = mgc_events_read((int)slot, &trace_cursor[slot], buf,
                                 DRAIN_BATCH, &lost);
      if (lost) {
        trace_lost[slot] += lost;
        trace_lost_total += lost;
        uint64_t t = n ? buf[0].time_ns : mgc_now_ns() - t0_ns;
        fprintf(trace_file,
                ",\n{\"name\":\"lost_events\",\"ph\":\"C\",\"ts\":%llu.%03u,"
                "\"pid\":1,\"tid\":%zu,\"args\":{\"value\":%llu}}",
                (unsigned long long)(t / 1000), (unsigned)(t % 1000), slot,
                (unsigned long long)trace_lost[slot]);
      }
      for (size_t i = 0; i < n; i++) {
        mgc_event *ev = &buf[i];
        char ph = ev->kind == MGC_EV_BEGIN ? 'B'
                  : ev->kind == MGC_EV_END ? 'E'
                                           : 'C';
        fprintf(trace_file,
                ",\n{\"name\":\"%s\",\"ph\":\"%c\",\"ts\":%llu.%03u,"
                "\"pid\":1,\"tid\":%zu",
                mgc_event_name(ev->name), ph,
                (unsigned long long)(ev->time_ns / 1000),
                (unsigned)(ev->time_ns % 1000), slot);
        if (ph == 'C')
          fprintf(trace_file, ",\"args\":{\"value\":%llu}",
                  (unsigned long long)ev->value);
        fputc('}', trace_file);
      }
      if (n < DRAIN_BATCH)
        break;
    }
  }
  fflush(trace_file);
}

static void *trace_main(void *arg) {
  (void)arg;
  struct timespec ts = {0, 20 * 1000 * 1000};
  while (!atomic_load_explicit(&trace_stop, memory_order_acquire)) {
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&trace_lock);
    if (trace_file)
      drain();
    pthread_mutex_unlock(&trace_lock);
  }
  return NULL;
}

void mgc_trace_open(const char *path) {
  if (!rings || mgc_rt.params.event_ring_size == 0) {
    fprintf(stderr, "mgc: trace= needs event rings (e= must not be 0)\n");
    return;
  }
  trace_file = fopen(path, "w");
  if (!trace_file) {
    fprintf(stderr, "mgc: cannot open trace file '%s'; tracing is off\n", path);
    return;
  }
  trace_cursor = mgc_xcalloc(ring_count, sizeof *trace_cursor, "trace");
  trace_lost = mgc_xcalloc(ring_count, sizeof *trace_lost, "trace");
  trace_named = mgc_xcalloc(ring_count, sizeof *trace_named, "trace");
  trace_lost_total = 0;
  fputs("{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\","
        "\"pid\":1,\"tid\":0,\"args\":{\"name\":\"mgc\"}}",
        trace_file);
  atomic_store(&trace_stop, false);
  trace_thread_running =
      pthread_create(&trace_thread, NULL, trace_main, NULL) == 0;
}

/* Under trace_lock: the last events, then the end of the JSON object. */
static void finish_file(void) {
  drain();
  fprintf(trace_file, "\n],\n\"otherData\":{\"lost_events\":%llu}}\n",
          (unsigned long long)trace_lost_total);
  fclose(trace_file);
  trace_file = NULL;
}

void mgc_trace_close(void) {
  if (trace_thread_running) {
    atomic_store_explicit(&trace_stop, true, memory_order_release);
    pthread_join(trace_thread, NULL);
    trace_thread_running = false;
  }
  pthread_mutex_lock(&trace_lock);
  if (trace_file)
    finish_file();
  pthread_mutex_unlock(&trace_lock);
  free(trace_cursor);
  free(trace_lost);
  free(trace_named);
  trace_cursor = trace_lost = NULL;
  trace_named = NULL;
}

/* From mgc_fatal: the program ends, the trace must still parse.  The lock
   may be held by the trace thread (then it is released within a drain) or
   by this very thread (a fatal error inside a drain: give up). */
void mgc_trace_emergency_close(void) {
  for (int tries = 0; tries < 100; tries++) {
    if (pthread_mutex_trylock(&trace_lock) == 0) {
      if (trace_file)
        finish_file();
      pthread_mutex_unlock(&trace_lock);
      return;
    }
    struct timespec ts = {0, 1000 * 1000};
    nanosleep(&ts, NULL);
  }
}

void mgc_events_teardown(void) {
  for (size_t i = 0; i < ring_count; i++) {
    struct mgc_ring *r = LOAD_RELAXED(&rings[i]);
    if (r) {
      free(r->slots);
      free(r);
    }
  }
  free(rings);
  rings = NULL;
  ring_count = 0;
}
