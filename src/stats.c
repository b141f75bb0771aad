/* Statistics, pause histograms and hooks (DESIGN §7.2).
 *
 * Counters are per domain, written by their owner with relaxed stores and
 * read by anyone with relaxed loads; a terminating domain adds its counters
 * to the orphan accumulators under all_domains_lock.  mgc_get_stats never
 * forces a collection (ocaml #11913).  Pause percentiles come from log-scale
 * histograms (16 buckets per power of two, so within 6.25 %) that need no
 * allocation in the collector.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* Durations under PAUSE_SUB ns have a bucket each; above, each octave
   [2^m, 2^(m+1)) is cut into PAUSE_SUB equal buckets, each at most
   1 / PAUSE_SUB of its lower end wide.  BUCKET_SHIFT numbers the cut
   octaves on from the exact buckets: ns = PAUSE_SUB goes to bucket
   PAUSE_SUB. */
#define BUCKET_SHIFT (PAUSE_SUB * PAUSE_SUB_LOG2 - PAUSE_SUB)

static unsigned bucket_of(uint64_t ns) {
  if (ns < PAUSE_SUB)
    return (unsigned)ns;
  unsigned msb = 63u - (unsigned)__builtin_clzll(ns);
  unsigned frac = (unsigned)(ns >> (msb - PAUSE_SUB_LOG2)) & (PAUSE_SUB - 1);
  unsigned b = msb * PAUSE_SUB + frac - BUCKET_SHIFT;
  return b < PAUSE_BUCKETS ? b : PAUSE_BUCKETS - 1;
}

/* The upper end of bucket b, in ns: the first duration past a cut bucket,
   an exact bucket's own duration. */
static uint64_t bucket_high(unsigned b) {
  if (b < PAUSE_SUB)
    return b;
  unsigned msb = (b + BUCKET_SHIFT) / PAUSE_SUB;
  unsigned frac = (b + BUCKET_SHIFT) % PAUSE_SUB;
  return (uint64_t)(PAUSE_SUB + frac + 1) << (msb - PAUSE_SUB_LOG2);
}

/* shared: several threads may add (the STW latency histogram, written by
   whichever domain closes an enter barrier), so the add is an RMW. */
void mgc_histogram_add(struct mgc_histogram *h, uint64_t ns, bool shared) {
  unsigned b = bucket_of(ns);
  if (shared)
    atomic_fetch_add_explicit(&h->counts[b], 1, memory_order_relaxed);
  else
    COUNTER_ADD(&h->counts[b], 1);
  uint64_t m = LOAD_RELAXED(&h->max_ns);
  while (ns > m &&
         !atomic_compare_exchange_weak_explicit(
             &h->max_ns, &m, ns, memory_order_relaxed, memory_order_relaxed)) {
  }
}

uint64_t mgc_histogram_percentile(const struct mgc_histogram *const *hs,
                                  size_t nh, double pct) {
  uint64_t total = 0, max = 0;
  for (size_t k = 0; k < nh; k++) {
    for (unsigned b = 0; b < PAUSE_BUCKETS; b++)
      total += LOAD_RELAXED(&hs[k]->counts[b]);
    uint64_t m = LOAD_RELAXED(&hs[k]->max_ns);
    if (m > max)
      max = m;
  }
  if (total == 0)
    return 0;
  uint64_t rank = (uint64_t)(pct / 100.0 * (double)total + 0.999999);
  if (rank < 1)
    rank = 1;
  uint64_t seen = 0;
  for (unsigned b = 0; b < PAUSE_BUCKETS; b++) {
    for (size_t k = 0; k < nh; k++)
      seen += LOAD_RELAXED(&hs[k]->counts[b]);
    if (seen >= rank) {
      uint64_t hi = bucket_high(b);
      return hi < max ? hi : max;
    }
  }
  return max;
}

static void histogram_merge(struct mgc_histogram *dst,
                            const struct mgc_histogram *src) {
  for (unsigned b = 0; b < PAUSE_BUCKETS; b++)
    COUNTER_ADD(&dst->counts[b], LOAD_RELAXED(&src->counts[b]));
  if (LOAD_RELAXED(&src->max_ns) > LOAD_RELAXED(&dst->max_ns))
    STORE_RELAXED(&dst->max_ns, LOAD_RELAXED(&src->max_ns));
}

static void add_dom_stats(struct mgc_dom_stats *dst,
                          const struct mgc_dom_stats *src) {
  COUNTER_ADD(&dst->minor_words, LOAD_RELAXED(&src->minor_words));
  COUNTER_ADD(&dst->promoted_words, LOAD_RELAXED(&src->promoted_words));
  COUNTER_ADD(&dst->major_words, LOAD_RELAXED(&src->major_words));
  COUNTER_ADD(&dst->major_slices, LOAD_RELAXED(&src->major_slices));
  COUNTER_ADD(&dst->remset_overflows, LOAD_RELAXED(&src->remset_overflows));
}

/* Under all_domains_lock. */
void mgc_stats_orphan(struct mgc_dom *d) {
  COUNTER_ADD(&d->stats.major_words, d->allocated_words);
  d->allocated_words = 0;
  add_dom_stats(&mgc_rt.orphan_stats, &d->stats);
  histogram_merge(&mgc_rt.orphan_pauses, &d->pauses);
  histogram_merge(&mgc_rt.orphan_major_pauses, &d->major_pauses);
  histogram_merge(&mgc_rt.orphan_compact_pauses, &d->compact_pauses);
}

void mgc_get_stats(mgc_stats *out) {
  struct mgc_dom *self = mgc_self_or_fatal("mgc_get_stats");
  memset(out, 0, sizeof *out);
  struct mgc_dom_stats sum;
  memset(&sum, 0, sizeof sum);
  const struct mgc_histogram *hs[4097], *ms[4097], *cs[4097];
  size_t nh = 0;
  pthread_mutex_lock(&mgc_rt.all_domains_lock);
  add_dom_stats(&sum, &mgc_rt.orphan_stats);
  ms[nh] = &mgc_rt.orphan_major_pauses;
  cs[nh] = &mgc_rt.orphan_compact_pauses;
  hs[nh++] = &mgc_rt.orphan_pauses;
  int n = LOAD_RELAXED(&mgc_rt.n_participants);
  for (int i = 0; i < n && nh < 4097; i++) {
    add_dom_stats(&sum, &mgc_rt.participants[i]->stats);
    ms[nh] = &mgc_rt.participants[i]->major_pauses;
    cs[nh] = &mgc_rt.participants[i]->compact_pauses;
    hs[nh++] = &mgc_rt.participants[i]->pauses;
  }
  out->minor_pause_p50_ns = mgc_histogram_percentile(hs, nh, 50);
  out->minor_pause_p99_ns = mgc_histogram_percentile(hs, nh, 99);
  out->minor_pause_max_ns = mgc_histogram_percentile(hs, nh, 100);
  out->major_stw_pause_p99_ns = mgc_histogram_percentile(ms, nh, 99);
  out->major_stw_pause_max_ns = mgc_histogram_percentile(ms, nh, 100);
  out->compaction_pause_max_ns = mgc_histogram_percentile(cs, nh, 100);
  pthread_mutex_unlock(&mgc_rt.all_domains_lock);
  const struct mgc_histogram *lat = &mgc_rt.stw_latency;
  out->stw_latency_p50_ns = mgc_histogram_percentile(&lat, 1, 50);
  out->stw_latency_p99_ns = mgc_histogram_percentile(&lat, 1, 99);
  out->stw_latency_max_ns = LOAD_RELAXED(&lat->max_ns);
  out->minor_words = LOAD_RELAXED(&sum.minor_words) +
                     (self->young_end - self->fast.young_ptr) / WORD;
  out->promoted_words = LOAD_RELAXED(&sum.promoted_words);
  out->major_words = LOAD_RELAXED(&sum.major_words) + self->allocated_words;
  out->major_slices = LOAD_RELAXED(&sum.major_slices);
  out->remset_overflows = LOAD_RELAXED(&sum.remset_overflows);
  out->minor_collections = LOAD_RELAXED(&mgc_rt.minor_collections);
  out->major_collections = LOAD_RELAXED(&mgc_rt.major_cycles);
  out->forced_major_collections = LOAD_RELAXED(&mgc_rt.forced_major);
  out->compactions = LOAD_RELAXED(&mgc_rt.compactions);
  out->compacted_words = LOAD_RELAXED(&mgc_rt.compacted_words);
  out->heap_words = LOAD_RELAXED(&mgc_rt.heap_words);
  out->top_heap_words = LOAD_RELAXED(&mgc_rt.top_heap_words);
  out->live_words = LOAD_RELAXED(&mgc_rt.live_words);
  out->domains = LOAD_RELAXED(&mgc_rt.domains_alive);
}

int mgc_get_domain_stats(int slot, mgc_stats *out) {
  struct mgc_dom *self = mgc_self_or_fatal("mgc_get_domain_stats");
  mgc_get_stats(out); /* the global fields */
  int found = 0;
  pthread_mutex_lock(&mgc_rt.all_domains_lock);
  int n = LOAD_RELAXED(&mgc_rt.n_participants);
  for (int i = 0; i < n; i++) {
    struct mgc_dom *d = mgc_rt.participants[i];
    if (d->id != slot)
      continue;
    found = 1;
    const struct mgc_histogram *h = &d->pauses, *m = &d->major_pauses,
                               *c = &d->compact_pauses;
    out->minor_pause_p50_ns = mgc_histogram_percentile(&h, 1, 50);
    out->minor_pause_p99_ns = mgc_histogram_percentile(&h, 1, 99);
    out->minor_pause_max_ns = mgc_histogram_percentile(&h, 1, 100);
    out->major_stw_pause_p99_ns = mgc_histogram_percentile(&m, 1, 99);
    out->major_stw_pause_max_ns = mgc_histogram_percentile(&m, 1, 100);
    out->compaction_pause_max_ns = mgc_histogram_percentile(&c, 1, 100);
    /* Relaxed: statistics written by their domain (COUNTER_ADD). */
    out->minor_words = LOAD_RELAXED(&d->stats.minor_words);
    if (d == self)
      out->minor_words += (d->young_end - d->fast.young_ptr) / WORD;
    out->promoted_words = LOAD_RELAXED(&d->stats.promoted_words);
    out->major_words = LOAD_RELAXED(&d->stats.major_words);
    out->major_slices = LOAD_RELAXED(&d->stats.major_slices);
    out->remset_overflows = LOAD_RELAXED(&d->stats.remset_overflows);
  }
  pthread_mutex_unlock(&mgc_rt.all_domains_lock);
  if (!found) {
    mgc_set_last_error(MGC_EINVAL);
    return -1;
  }
  return 0;
}

#define US(ns) ((double)(ns) / 1e3)

void mgc_print_stats(FILE *f) {
  mgc_stats s;
  mgc_get_stats(&s);
  if (!f)
    f = stderr;
  fprintf(f,
          "minor_collections:      %llu\n"
          "major_collections:      %llu\n"
          "forced_major:           %llu\n"
          "compactions:            %llu\n"
          "minor_words:            %llu\n"
          "promoted_words:         %llu\n"
          "major_words:            %llu\n"
          "heap_words:             %llu\n"
          "top_heap_words:         %llu\n"
          "live_words:             %llu\n"
          "compacted_words:        %llu\n"
          "minor_pause_us:         p50 %.1f  p99 %.1f  max %.1f\n"
          "major_stw_pause_us:     p99 %.1f  max %.1f\n"
          "stw_latency_us:         p50 %.1f  p99 %.1f  max %.1f\n"
          "domains:                %llu\n",
          (unsigned long long)s.minor_collections,
          (unsigned long long)s.major_collections,
          (unsigned long long)s.forced_major_collections,
          (unsigned long long)s.compactions, (unsigned long long)s.minor_words,
          (unsigned long long)s.promoted_words,
          (unsigned long long)s.major_words, (unsigned long long)s.heap_words,
          (unsigned long long)s.top_heap_words,
          (unsigned long long)s.live_words,
          (unsigned long long)s.compacted_words, US(s.minor_pause_p50_ns),
          US(s.minor_pause_p99_ns), US(s.minor_pause_max_ns),
          US(s.major_stw_pause_p99_ns), US(s.major_stw_pause_max_ns),
          US(s.stw_latency_p50_ns), US(s.stw_latency_p99_ns),
          US(s.stw_latency_max_ns), (unsigned long long)s.domains);
  int slots[4096];
  int n = 0;
  pthread_mutex_lock(&mgc_rt.all_domains_lock);
  int np = LOAD_RELAXED(&mgc_rt.n_participants);
  for (int i = 0; i < np && n < 4096; i++)
    slots[n++] = mgc_rt.participants[i]->id;
  pthread_mutex_unlock(&mgc_rt.all_domains_lock);
  for (int i = 0; i < n; i++) {
    mgc_stats ds;
    if (mgc_get_domain_stats(slots[i], &ds) != 0)
      continue;
    fprintf(f,
            "domain %d: minor_words %llu promoted_words %llu major_words %llu "
            "slices %llu minor_pause_us p50 %.1f p99 %.1f max %.1f\n",
            slots[i], (unsigned long long)ds.minor_words,
            (unsigned long long)ds.promoted_words,
            (unsigned long long)ds.major_words,
            (unsigned long long)ds.major_slices, US(ds.minor_pause_p50_ns),
            US(ds.minor_pause_p99_ns), US(ds.minor_pause_max_ns));
  }
  fflush(f);
}

/* v=0x400 at shutdown, to the log stream. */
void mgc_stats_print(void) { mgc_print_stats(mgc_log_stream()); }

static void set_hook(_Atomic(void (*)(void)) *slot, void (*hook)(void)) {
  /* Release: pairs with the acquire load in mgc_call_hook. */
  atomic_store_explicit(slot, hook, memory_order_release);
}

void mgc_set_minor_gc_begin_hook(void (*hook)(void)) {
  set_hook(&mgc_rt.minor_begin_hook, hook);
}
void mgc_set_minor_gc_end_hook(void (*hook)(void)) {
  set_hook(&mgc_rt.minor_end_hook, hook);
}
void mgc_set_major_slice_begin_hook(void (*hook)(void)) {
  set_hook(&mgc_rt.slice_begin_hook, hook);
}
void mgc_set_major_slice_end_hook(void (*hook)(void)) {
  set_hook(&mgc_rt.slice_end_hook, hook);
}
