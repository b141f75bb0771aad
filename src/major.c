/* The major collector: colours, darkening, the mark stack, slices paced by
 * allocation, and the cycle end (DESIGN §6.3-6.7, §6.10).
 *
 * Snapshot at the beginning: at each cycle start, inside a STW section with
 * every minor heap empty, the meanings of the colours rotate (MARKED becomes
 * UNMARKED, UNMARKED becomes GARBAGE, GARBAGE becomes MARKED; no header is
 * touched) and every domain darkens its roots.  During the cycle each domain
 * sweeps its own pools and marks from its own mark stack in slices, while
 * mutators run; the write barrier darkens every overwritten major value
 * (invariant 12), new blocks are born MARKED (invariant 19), so every block
 * reachable at the snapshot or allocated since is MARKED when all stacks are
 * empty.  The cycle ends in a STW section that first empties the minor heaps,
 * lets every domain finish its own marking and sweeping (so no block is
 * GARBAGE any more: invariant 26), then rotates and starts the next cycle.
 * In this version the end of marking is not detected concurrently: the
 * cycle end simply finishes whatever is left while the world is stopped.
 *
 * Marking only turns UNMARKED into MARKED (invariant 27); on Lazy and
 * Forcing blocks that change is a CAS, because a mutator may be changing
 * the tag at the same moment (invariant 28).  The mark stack never loses an
 * entry (invariant 36).
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Initial meanings: 0 MARKED, 1 UNMARKED, 2 GARBAGE (DESIGN §1.2). */
struct mgc_colours mgc_colours = {(word)1 << 8, (word)0 << 8, (word)2 << 8};

size_t mgc_mark_stack_cap_for_tests;
_Atomic size_t mgc_mark_stack_prunes;

#define MARK_STACK_INITIAL 4096 /* entries; more than the slots of a pool */
#define CSET_CHUNK_WORDS 64
#define CSET_CHUNK_MASK ((word)(CSET_CHUNK_WORDS * WORD) - 1)
#define SHORT_RANGE 64 /* ranges up to this many fields may be compressed */

/* ------------------------------------------------------------------------ */
/* Mark stack and compressed set                                            */
/* ------------------------------------------------------------------------ */

static size_t mark_stack_limit(void) {
  if (mgc_mark_stack_cap_for_tests)
    return mgc_mark_stack_cap_for_tests;
  size_t lim = LOAD_RELAXED(&mgc_rt.heap_words) / 32;
  return lim < MARK_STACK_INITIAL ? MARK_STACK_INITIAL : lim;
}

static void cset_insert(struct mark_stack *ms, word addr);

static void cset_grow(struct mark_stack *ms) {
  word *keys = ms->cset_keys;
  uint64_t *bits = ms->cset_bits;
  size_t cap = ms->cset_capacity;
  ms->cset_capacity = cap ? cap * 2 : 1024;
  ms->cset_keys = mgc_xcalloc(ms->cset_capacity, sizeof(word), "mark set");
  ms->cset_bits = mgc_xcalloc(ms->cset_capacity, sizeof(uint64_t), "mark set");
  ms->cset_count = 0;
  for (size_t i = 0; i < cap; i++) {
    if (!keys[i])
      continue;
    for (unsigned b = 0; b < 64; b++)
      if (bits[i] >> b & 1)
        cset_insert(ms, keys[i] + b * WORD);
  }
  free(keys);
  free(bits);
}

/* Records one field address in the compressed set. */
static void cset_insert(struct mark_stack *ms, word addr) {
  if (2 * (ms->cset_count + 1) > ms->cset_capacity)
    cset_grow(ms);
  word key = addr & ~CSET_CHUNK_MASK;
  size_t mask = ms->cset_capacity - 1;
  size_t i = (size_t)((key >> 9) * 0x9E3779B97F4A7C15u) & mask;
  while (ms->cset_keys[i] && ms->cset_keys[i] != key)
    i = (i + 1) & mask;
  if (!ms->cset_keys[i]) {
    ms->cset_keys[i] = key;
    ms->cset_count++;
  }
  ms->cset_bits[i] |= (uint64_t)1 << ((addr & CSET_CHUNK_MASK) / WORD);
}

/* The stack is at its limit: move every short range into the compressed
   set.  What stays are ranges of more than SHORT_RANGE fields, of which
   there can be at most heap/64, so the stack then has room. */
static void mark_stack_prune(struct mark_stack *ms) {
  size_t kept = 0;
  for (size_t i = 0; i < ms->count; i++) {
    struct mark_entry e = ms->stack[i];
    if (e.end - e.start > SHORT_RANGE) {
      ms->stack[kept++] = e;
      continue;
    }
    for (mgc_value *p = e.start; p < e.end; p++)
      cset_insert(ms, (word)p);
  }
  atomic_fetch_add_explicit(&mgc_mark_stack_prunes, 1, memory_order_relaxed);
  mgc_log(MGC_VERBOSE_TABLES, "mark stack pruned: %zu -> %zu entries",
          ms->count, kept);
  ms->count = kept;
}

/* The stack is full (or at the test cap): prune or grow. */
static void mark_stack_make_room(struct mark_stack *ms) {
  if (ms->count >= mark_stack_limit())
    mark_stack_prune(ms);
  if (ms->count == ms->capacity) {
    /* Below the limit, or only long ranges left (at most heap/64). */
    size_t cap = ms->capacity ? ms->capacity * 2 : MARK_STACK_INITIAL;
    ms->stack = mgc_xrealloc(ms->stack, cap * sizeof *ms->stack, "mark stack");
    ms->capacity = cap;
    mgc_log(MGC_VERBOSE_TABLES, "mark stack grown to %zu entries", cap);
  }
}

static inline void mark_stack_push(struct mark_stack *ms, mgc_value *start,
                                   mgc_value *end) {
  if (MGC_UNLIKELY(ms->count == ms->capacity ||
                   (mgc_mark_stack_cap_for_tests &&
                    ms->count >= mgc_mark_stack_cap_for_tests)))
    mark_stack_make_room(ms);
  ms->stack[ms->count].start = start;
  ms->stack[ms->count].end = end;
  ms->count++;
}

/* Refills the empty stack from the compressed set: one chunk's fields,
   coalesced into ranges.  False when the set is empty too. */
static bool mark_stack_refill(struct mark_stack *ms) {
  while (ms->cset_count) {
    size_t cap = ms->cset_capacity;
    size_t i = ms->cset_cursor;
    while (i < cap && !ms->cset_keys[i])
      i++;
    if (i == cap) {
      ms->cset_cursor = 0;
      continue;
    }
    ms->cset_cursor = i;
    word key = ms->cset_keys[i];
    uint64_t bits = ms->cset_bits[i];
    /* Remove the entry, then re-insert the run that follows it so that
       linear probing stays valid. */
    ms->cset_keys[i] = 0;
    ms->cset_bits[i] = 0;
    ms->cset_count--;
    size_t j = (i + 1) & (cap - 1);
    while (ms->cset_keys[j]) {
      word k = ms->cset_keys[j];
      uint64_t b = ms->cset_bits[j];
      ms->cset_keys[j] = 0;
      ms->cset_bits[j] = 0;
      ms->cset_count--;
      for (unsigned t = 0; t < 64; t++)
        if (b >> t & 1)
          cset_insert(ms, k + t * WORD);
      j = (j + 1) & (cap - 1);
    }
    unsigned b = 0;
    while (b < 64) {
      if (!(bits >> b & 1)) {
        b++;
        continue;
      }
      unsigned e = b;
      while (e < 64 && (bits >> e & 1))
        e++;
      mark_stack_push(ms, (mgc_value *)(key + b * WORD),
                      (mgc_value *)(key + e * WORD));
      b = e;
    }
    return true;
  }
  return false;
}

void mgc_mark_stack_free(struct mark_stack *ms) {
  free(ms->stack);
  free(ms->cset_keys);
  free(ms->cset_bits);
  memset(ms, 0, sizeof *ms);
}

static inline bool mark_stack_empty(const struct mark_stack *ms) {
  return ms->count == 0 && ms->cset_count == 0;
}

/* ------------------------------------------------------------------------ */
/* Darkening and marking                                                    */
/* ------------------------------------------------------------------------ */

/* UNMARKED -> MARKED.  Relaxed stores suffice for most tags: the only
   concurrent writers of such a header are other markers storing the very
   same value.  Lazy and Forcing headers may be CASed by a mutator changing
   the tag, so their colour changes by CAS too (invariant 28, oxcaml #6109).
   Returns false when another domain marked it first. */
static inline bool set_marked(mgc_value v, word hd) {
  unsigned tag = MGC_TAG_HD(hd);
  word unmarked = mgc_colours.unmarked, marked = mgc_colours.marked;
  if (MGC_UNLIKELY(tag == MGC_TAG_LAZY || tag == MGC_TAG_FORCING)) {
    while (!atomic_compare_exchange_weak_explicit(
        HDR_PTR(v), &hd, WITH_COLOUR(hd, marked), memory_order_relaxed,
        memory_order_relaxed)) {
      if (COLOUR_HD(hd) != unmarked)
        return false;
    }
    return true;
  }
  STORE_RELAXED(HDR_PTR(v), WITH_COLOUR(hd, marked));
  return true;
}

/* The fields of a block the major GC scans: closures from their start of
   environment (code pointers and infix headers are never followed). */
static inline mgc_value *scan_start(mgc_value v, word hd) {
  if (MGC_TAG_HD(hd) == MGC_TAG_CLOSURE && MGC_WOSIZE_HD(hd) >= 2) {
    word ci = LOAD_RELAXED(AWORD(&MGC_FIELD(v, 1)));
    size_t start = MGC_CLOSINFO_STARTENV(ci);
    return (mgc_value *)v +
           (start < MGC_WOSIZE_HD(hd) ? start : MGC_WOSIZE_HD(hd));
  }
  return (mgc_value *)v;
}

static void reopen_marking(struct mgc_dom *d) {
  if (!d->busy_counted) {
    d->busy_counted = true;
    /* Relaxed: busy_domains is a hint for when to request the cycle end,
       which re-checks everything inside a STW section. */
    atomic_fetch_add_explicit(&mgc_rt.busy_domains, 1, memory_order_relaxed);
  }
}

/* Marks v if it is UNMARKED and pushes its fields; returns the work. */
static inline intptr_t mark_block(struct mgc_dom *d, mgc_value v,
                                  word unmarked) {
  word hd = LOAD_RELAXED(HDR_PTR(v));
  if (MGC_UNLIKELY(MGC_TAG_HD(hd) == MGC_TAG_INFIX)) {
    v -= (mgc_value)(MGC_WOSIZE_HD(hd) * WORD);
    hd = LOAD_RELAXED(HDR_PTR(v));
  }
  if (COLOUR_HD(hd) != unmarked || !set_marked(v, hd))
    return 0;
  size_t wosize = MGC_WOSIZE_HD(hd);
  if (MGC_TAG_HD(hd) >= MGC_TAG_NO_SCAN || wosize == 0)
    return 1 + (intptr_t)wosize;
  mark_stack_push(&d->mark, scan_start(v, hd), (mgc_value *)v + wosize);
  return 1;
}

/* Darkens one root (cycle start): marks it and queues its fields. */
void mgc_darken(struct mgc_dom *d, mgc_value v) {
  if (!MGC_IS_BLOCK(v) || mgc_is_young(v))
    return;
  size_t before = d->mark.count;
  mark_block(d, v, mgc_colours.unmarked);
  if (d->mark.count != before)
    reopen_marking(d);
}

/* Darkens the values the write barrier buffered, prefetching their headers
   a few entries ahead. */
void mgc_grey_drain(struct mgc_dom *d) {
  size_t n = d->grey_count;
  if (n == 0)
    return;
  word unmarked = mgc_colours.unmarked;
  size_t before = d->mark.count;
  for (size_t i = 0; i < n; i++) {
    if (i + 8 < n)
      __builtin_prefetch((word *)d->grey[i + 8] - 1, 1);
    mark_block(d, d->grey[i], unmarked);
  }
  d->grey_count = 0;
  if (d->mark.count != before)
    reopen_marking(d);
}

/* Marks within budget words; returns the work done.  A range is scanned
   whole (large ones in chunks); each child found goes through a small ring
   after a prefetch of its header, so that several cache misses are in
   flight at once, and is marked (its fields pushed as a range) when it
   leaves the ring.  Field reads are acquire loads: a mutator of another
   domain may store into the field at the same time (mgc_modify's release
   store), and during a minor collection a promoter may rewrite a
   remembered field with the address of a copy (release store): acquiring
   the field orders our reads of the copy's header, and of the infix header
   an infix pointer steps back over, after their writes (Note [publishing
   copies] in minor.c).  On x86 an acquire load is a plain load. */
#define MARK_RING 16
#define MARK_CHUNK 1024

static intptr_t mark(struct mgc_dom *d, intptr_t budget) {
  struct mark_stack *ms = &d->mark;
  word unmarked = mgc_colours.unmarked;
  intptr_t work = 0;
  mgc_value ring[MARK_RING];
  unsigned head = 0, tail = 0;
  while (work < budget) {
    if (ms->count > 0 || mark_stack_refill(ms)) {
      struct mark_entry e = ms->stack[--ms->count];
      if (e.end - e.start > MARK_CHUNK) {
        mark_stack_push(ms, e.start + MARK_CHUNK, e.end);
        e.end = e.start + MARK_CHUNK;
      }
      work += e.end - e.start;
      for (mgc_value *p = e.start; p < e.end; p++) {
        mgc_value v = (mgc_value)LOAD_ACQUIRE(AWORD(p));
        if (!MGC_IS_BLOCK(v) || mgc_is_young(v))
          continue;
        if (tail - head == MARK_RING)
          work += mark_block(d, ring[head++ % MARK_RING], unmarked);
        __builtin_prefetch((word *)v - 1, 1);
        ring[tail++ % MARK_RING] = v;
      }
      continue;
    }
    if (head == tail)
      break;
    work += mark_block(d, ring[head++ % MARK_RING], unmarked);
  }
  /* Nothing taken out of a range may be lost (invariant 36). */
  while (head != tail)
    work += mark_block(d, ring[head++ % MARK_RING], unmarked);
  return work;
}

/* ------------------------------------------------------------------------ */
/* Pacing and slices                                                        */
/* ------------------------------------------------------------------------ */

/* Words of marking and sweeping owed per word allocated in the major heap.
   With o = space_overhead, a cycle marks the live words L and sweeps the
   heap H (counted at a quarter of a word each: a sequential scan).  A
   block allocated in cycle n is freed during cycle n + 2, so the heap
   holds L plus about two cycles of allocation; a cycle may therefore take
   about L * o / 200 words for the heap to stay near (1 + o/100) L, and
   work / allocated word = (L + H / 4) / (L o / 200), about
   (200 + o) / o once H / 4 and the roots are counted.  Measured on the
   benchmarks, this keeps the peak heap at or below OCaml's. */
static double work_per_word(void) {
  double o = mgc_rt.params.space_overhead;
  return (200.0 + o) / o;
}

static double total_cycle_work(void) {
  double h = (double)LOAD_RELAXED(&mgc_rt.heap_words);
  double o = mgc_rt.params.space_overhead;
  return h + h * 100.0 / (100.0 + o);
}

void mgc_note_major_alloc(struct mgc_dom *d, size_t words) {
  d->allocated_words += words;
  if (d->allocated_words > d->minor_heap_words / 5 && !d->requested_major_slice)
    mgc_request_major_slice(d);
}

void mgc_adjust_gc_speed(struct mgc_dom *d, size_t mem, size_t max) {
  if (max == 0) {
    max = LOAD_RELAXED(&mgc_rt.heap_words) * WORD / 150 *
          mgc_rt.params.custom_major_ratio;
    if (max == 0)
      max = 1;
  }
  if (mem > max)
    mem = max;
  d->extra_resources += (double)mem / (double)max;
  if (d->extra_resources > 0.2 && !d->requested_major_slice)
    mgc_request_major_slice(d);
}

bool mgc_major_work_done(struct mgc_dom *d) {
  return d->grey_count == 0 && mark_stack_empty(&d->mark) &&
         mgc_heap_sweep_done(d);
}

static void note_work_state(struct mgc_dom *d) {
  if (d->busy_counted && mgc_major_work_done(d)) {
    d->busy_counted = false;
    atomic_fetch_sub_explicit(&mgc_rt.busy_domains, 1, memory_order_relaxed);
  }
}

/* Sweeps and marks until budget words of work are done or nothing is
   left; returns the work done. */
static intptr_t do_work(struct mgc_dom *d, intptr_t budget) {
  intptr_t done = 0;
  mgc_grey_drain(d);
  if (!mgc_heap_sweep_done(d))
    done += mgc_heap_sweep(d, budget);
  if (done < budget)
    done += mark(d, budget - done);
  return done;
}

/* Opportunistic work while waiting at a barrier (DESIGN §4.6): a small
   budget of this domain's own marking and sweeping, never a phase change.
   Returns whether there was work. */
bool mgc_major_opportunistic_work(void *dom) {
  struct mgc_dom *d = dom;
  if (mgc_major_work_done(d))
    return false;
  mgc_pay_work(do_work(d, 512));
  return true;
}

void mgc_major_finish_own_work(struct mgc_dom *d) {
  while (!mgc_major_work_done(d))
    do_work(d, INTPTR_MAX / 2);
  note_work_state(d);
}

/* A slice (mutator context).  An automatic slice adds what this domain
   allocated in the major heap since its last slice, converted to work, plus
   the custom blocks' extra resources, to the global debt, and works until
   the debt is paid or it has nothing left; any domain's work pays for all.
   When the domain has nothing left to do and a debt remains, or every
   domain is done, the cycle ends (in a STW section that finishes what the
   others have left). */
void mgc_major_slice_run(struct mgc_dom *d, intptr_t work, bool automatic) {
  mgc_call_hook(&mgc_rt.slice_begin_hook);
  mgc_trace_begin(d, "major_slice");
  COUNTER_ADD(&d->stats.major_slices, 1);
  intptr_t budget;
  bool paying = automatic || work <= 0;
  if (paying) {
    double owed = (double)d->allocated_words * work_per_word() +
                  d->extra_resources * total_cycle_work();
    COUNTER_ADD(&d->stats.major_words, d->allocated_words);
    d->allocated_words = 0;
    d->extra_resources = 0;
    int64_t total = atomic_fetch_add_explicit(&mgc_rt.work_owed, (int64_t)owed,
                                              memory_order_relaxed) +
                    (int64_t)owed;
    int64_t debt = total - LOAD_RELAXED(&mgc_rt.work_paid);
    budget = debt > 0 ? (intptr_t)debt : 0;
  } else {
    budget = work;
  }
  /* In chunks, serving stop-the-world requests in between: a slice must
     not hold the other domains' collections back (DESIGN §6.10). */
  intptr_t done = 0;
  while (done < budget) {
    intptr_t chunk = budget - done < 16384 ? budget - done : 16384;
    intptr_t w = do_work(d, chunk);
    done += w;
    if (paying)
      mgc_pay_work(w);
    if (w < chunk)
      break;
    if (atomic_load_explicit(&d->interrupt_pending, memory_order_acquire))
      mgc_stw_participate(d);
  }
  note_work_state(d);
  bool end_cycle = false;
  if (!d->busy_counted && done < budget) {
    int busy = atomic_load_explicit(&mgc_rt.busy_domains, memory_order_relaxed);
    int64_t debt =
        LOAD_RELAXED(&mgc_rt.work_owed) - LOAD_RELAXED(&mgc_rt.work_paid);
    int64_t patience =
        (int64_t)(LOAD_RELAXED(&mgc_rt.heap_words) / 8 + d->minor_heap_words);
    end_cycle = busy == 0 || mgc_single_domain() || debt > patience;
  }
  mgc_trace_end(d, "major_slice");
  mgc_call_hook(&mgc_rt.slice_end_hook);
  if (end_cycle)
    mgc_major_finish_cycle(d, 1, false);
}

void mgc_major_slice(intptr_t work) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_major_slice");
  mgc_major_slice_run(d, work, work == 0);
  mgc_reset_young_limit(d);
}

/* ------------------------------------------------------------------------ */
/* Cycle end                                                                */
/* ------------------------------------------------------------------------ */

static void darken_action(void *ctx, mgc_value v, mgc_value *slot) {
  (void)slot;
  mgc_darken(ctx, v);
}

static void rotate_colours(void) {
  struct mgc_colours c = mgc_colours;
  mgc_colours.marked = c.garbage;
  mgc_colours.unmarked = c.marked;
  mgc_colours.garbage = c.unmarked;
}

struct cycle_request {
  bool forced;
};

/* The cycle-end STW handler (DESIGN §6.7, simplified: no ephemeron or
   finaliser phases yet).  Colours are plain globals: they are written here
   by one domain between two barriers and read by others only after the
   barrier (acquire), so no domain sees them change while it works. */
static void stw_cycle_end(struct mgc_dom *d, void *data, int idx, int n,
                          struct mgc_dom **parts) {
  struct cycle_request *req = data;
  /* 1. Empty every minor heap. */
  if (mgc_stw_barrier_begin(n)) {
    mgc_minor_leader_setup();
    mgc_stw_barrier_release();
  }
  mgc_minor_from_stw(d, idx, n, parts);
  /* 2. Finish this domain's marking and sweeping: afterwards no block is
     GARBAGE and every block reachable at the snapshot is MARKED. */
  mgc_trace_begin(d, "major_finish");
  mgc_major_finish_own_work(d);
  mgc_trace_end(d, "major_finish");
  /* 3. One domain rotates the colours. */
  if (mgc_stw_barrier_begin(n)) {
    if (mgc_rt.params.verify || MGC_DEBUG >= 3)
      mgc_verify_from_stw();
    rotate_colours();
    atomic_fetch_add_explicit(&mgc_rt.major_cycles, 1, memory_order_relaxed);
    if (req->forced)
      atomic_fetch_add_explicit(&mgc_rt.forced_major, 1, memory_order_relaxed);
    mgc_heap_release_free_pools(false);
    STORE_RELAXED(&mgc_rt.busy_domains, n);
    /* Everything owed for the old cycle was just done, in the section. */
    STORE_RELAXED(&mgc_rt.work_paid, LOAD_RELAXED(&mgc_rt.work_owed));
    mgc_log(MGC_VERBOSE_MAJOR, "major cycle %llu ends, heap %zu words",
            (unsigned long long)LOAD_RELAXED(&mgc_rt.major_cycles),
            (size_t)LOAD_RELAXED(&mgc_rt.heap_words));
    mgc_stw_barrier_release();
  }
  /* 4. Every domain starts the new cycle: its pools become unswept, its
     roots are darkened; participant 0 adopts orphans and darkens the
     global roots. */
  mgc_heap_cycle_start(d);
  if (idx == 0)
    mgc_heap_adopt_orphans(d);
  d->busy_counted = true;
  mgc_scan_local_roots(d, darken_action, d);
  if (idx == 0)
    mgc_scan_global_roots(darken_action, d, false);
  /* 5. No mutator may run while the global roots are being read. */
  mgc_stw_barrier(n);
}

/* Runs `cycles` cycle ends (mutator context), each a STW section; a
   section run by another domain that ended a cycle counts too. */
void mgc_major_finish_cycle(struct mgc_dom *d, int cycles, bool forced) {
  struct cycle_request req = {forced};
  for (int i = 0; i < cycles; i++) {
    uint64_t start = LOAD_RELAXED(&mgc_rt.major_cycles);
    while (LOAD_RELAXED(&mgc_rt.major_cycles) == start)
      mgc_try_run_on_all_domains(d, stw_cycle_end, &req, NULL);
  }
  mgc_reset_young_limit(d);
}

static void stw_sweep_all(struct mgc_dom *d, void *data, int idx, int n,
                          struct mgc_dom **parts) {
  (void)data;
  (void)parts;
  mgc_major_finish_own_work(d);
  if (mgc_stw_barrier_begin(n)) {
    uint64_t live = 0;
    for (int i = 0; i < n; i++)
      live += mgc_heap_live_words(parts[i]);
    STORE_RELAXED(&mgc_rt.live_words, live);
    mgc_stw_barrier_release();
  }
  (void)idx;
}

void mgc_major_collection(void) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_major_collection");
  mgc_major_finish_cycle(d, 1, true);
}

/* Two cycle ends make every block dead at the call GARBAGE; a last section
   sweeps everything and records the live words. */
static void full_major(struct mgc_dom *d) {
  mgc_major_finish_cycle(d, 2, true);
  while (!mgc_try_run_on_all_domains(d, stw_sweep_all, NULL, NULL)) {
  }
  mgc_reset_young_limit(d);
}

void mgc_full_major(void) { full_major(mgc_self_or_fatal("mgc_full_major")); }

static void stw_release_all(struct mgc_dom *d, void *data, int idx, int n,
                            struct mgc_dom **parts) {
  (void)d;
  (void)data;
  (void)parts;
  if (mgc_stw_barrier_begin(n)) {
    mgc_heap_release_free_pools(true);
    atomic_fetch_add_explicit(&mgc_rt.compactions, 1, memory_order_relaxed);
    mgc_stw_barrier_release();
  }
  (void)idx;
}

void mgc_compact(void) {
  struct mgc_dom *d = mgc_self_or_fatal("mgc_compact");
  full_major(d);
  while (!mgc_try_run_on_all_domains(d, stw_release_all, NULL, NULL)) {
  }
}
