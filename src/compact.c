/* Compaction: moving blocks out of sparse pools and giving the pools back
 * (DESIGN §6.11, OCaml 5.2's Gc.compact, done by every domain at once).
 *
 * It runs inside a cycle-end section, right after the colours rotated and
 * before any root is darkened: every minor heap and table is empty, every
 * mark stack is empty, marking and sweeping of the finished cycle are
 * complete, so every block is UNMARKED (live) or GARBAGE (dead), and none
 * is MARKED.  Phases, each domain on its own heap (a domain in a blocking
 * section through its backup thread), separated by barriers:
 *
 *   1. sweep: every pool and large block of the domain (GARBAGE freed,
 *      custom blocks finalised, dead continuations' stacks freed), so that
 *      each pool's free list and live count are exact;
 *   2. evacuate (pool.c): per size class, the least occupied pools are
 *      emptied into the free slots of the fullest; an evacuated block keeps
 *      its header with the colour MARKED and has field 0 = its new address
 *      (the copy has the original header and fields);
 *   3. update: every pointer to a MARKED block is replaced by field 0 of
 *      the block (plus the offset, for an infix pointer: the infix headers
 *      of the old copy are intact).  Each domain updates the fields of the
 *      blocks in its pools and large blocks, the stacks of its
 *      continuations, its ephemerons (being Abstract, they are not scanned
 *      as blocks) and finaliser tables, its local roots, held stacks and
 *      the embedder's hook; participant 0 the global roots and the orphaned
 *      ephemerons and finalisers;
 *   4. release: the evacuated pools go back to the pool cache, and the
 *      cache to the OS; the (empty) mark stack is freed too, since a
 *      shrunken heap needs a smaller one.
 * Invariants after it: no pointer leads into a released pool (the verifier
 * checks this at V=1), every block is UNMARKED, every pool is swept.
 * Large blocks are never moved.
 */
#include "internal.h"

#include <string.h>

/* One slot: a pointer to an evacuated block gets the block's new address. */
static inline void fix(mgc_value *p) {
  mgc_value v = *p;
  if (!MGC_IS_BLOCK(v) || v == 0)
    return;
  word hd = LOAD_RELAXED(HDR_PTR(v));
  mgc_value off = 0;
  if (MGC_TAG_HD(hd) == MGC_TAG_INFIX) {
    off = (mgc_value)(MGC_WOSIZE_HD(hd) * WORD);
    hd = LOAD_RELAXED(HDR_PTR(v - off));
  }
  if (COLOUR_HD(hd) == mgc_colours.marked)
    *p = (mgc_value)LOAD_RELAXED(AWORD(v - off)) + off;
}

static void fix_action(void *ctx, mgc_value v, mgc_value *slot) {
  (void)ctx;
  (void)v;
  fix(slot);
}

/* The fields of one live block: closures from their start of environment,
   continuations through their stack, nothing in unscanned blocks. */
static void fix_block(word *hp) {
  word hd = LOAD_RELAXED(AWORD(hp));
  mgc_value v = (mgc_value)(hp + 1);
  unsigned tag = MGC_TAG_HD(hd);
  size_t sz = MGC_WOSIZE_HD(hd);
  if (tag == MGC_TAG_CONT) {
    mgc_stack *s = mgc_cont_field_stack(LOAD_RELAXED(AWORD(&MGC_FIELD(v, 0))));
    if (s)
      mgc_stack_scan(s, fix_action, NULL);
    return;
  }
  if (tag >= MGC_TAG_NO_SCAN)
    return;
  size_t i =
      tag == MGC_TAG_CLOSURE && sz >= 2 ? mgc_closure_env_start(v, sz) : 0;
  for (; i < sz; i++)
    fix(&MGC_FIELD(v, i));
}

static void fix_pool(void *data, struct pool *p, bool swept) {
  (void)data;
  (void)swept;
  word *start, *end;
  size_t wh;
  mgc_pool_bounds(p, &start, &end, &wh);
  for (word *s = start; s < end; s += wh)
    if (LOAD_RELAXED(AWORD(s)) != 0)
      fix_block(s);
}

static void fix_large(void *data, word *hp, bool swept) {
  (void)data;
  (void)swept;
  fix_block(hp);
}

/* Set in the cycle end's single section, read by every participant. */
static bool compact_this_cycle;

/* In the single section of a cycle end, after the rotation: whether this
   cycle end compacts.  The live words counted are an upper bound (they
   include what died in the finished cycle), so the automatic rule errs on
   the side of not compacting. */
void mgc_compact_decide(int n, struct mgc_dom **parts) {
  bool c = atomic_exchange(&mgc_rt.compact_requested, false);
  uint64_t cycles = LOAD_RELAXED(&mgc_rt.major_cycles);
  size_t every = mgc_rt.params.compact_every;
  if (every && cycles % every == 0)
    c = true;
  unsigned ratio = mgc_rt.params.compact_overhead;
  if (!c && ratio) {
    size_t live = 0;
    for (int i = 0; i < n; i++)
      live += mgc_heap_live_words(parts[i]);
    size_t heap = LOAD_RELAXED(&mgc_rt.heap_words);
    if (live > 0 && heap > live &&
        (double)(heap - live) * 100.0 > (double)ratio * (double)live) {
      c = true;
      mgc_log(MGC_VERBOSE_HEAP,
              "compacting: %zu free words over %zu live exceed o=%u%%",
              heap - live, live, ratio);
    }
  }
  compact_this_cycle = c;
}

bool mgc_compact_now(void) { return compact_this_cycle; }

void mgc_compact_from_stw(struct mgc_dom *d, int idx, int n) {
  uint64_t t0 = mgc_now_ns();
  mgc_ev_begin(d, MGC_EVN_COMPACT);
  size_t heap_before = LOAD_RELAXED(&mgc_rt.heap_words);
  /* 1. sweep */
  while (!mgc_heap_sweep_done(d))
    mgc_pay_work(mgc_heap_sweep(d, 1 << 20));
  /* 2. evacuate */
  size_t moved = mgc_heap_evacuate(d);
  mgc_stw_barrier(n);
  /* 3. update */
  mgc_heap_for_each(d, fix_pool, fix_large, NULL);
  mgc_ephe_compact_update(d, fix_action, NULL);
  mgc_final_compact_update(d, fix_action, NULL);
  mgc_scan_local_roots(d, fix_action, NULL, MGC_SCAN_FULL);
  if (idx == 0) {
    mgc_scan_global_roots(fix_action, NULL, false);
    mgc_ephe_compact_update_orphans(fix_action, NULL);
    mgc_final_compact_update_orphans(fix_action, NULL);
  }
  mgc_stw_barrier(n);
  /* 4. release (the mark stack, empty now, too) */
  size_t released = mgc_heap_release_evacuated(d);
  mgc_mark_stack_trim(&d->mark);
  atomic_fetch_add_explicit(&mgc_rt.compacted_words, moved,
                            memory_order_relaxed);
  if (mgc_stw_barrier_begin(n)) {
    mgc_heap_release_free_pools(true);
    mgc_heap_reset_held();
    atomic_fetch_add_explicit(&mgc_rt.compactions, 1, memory_order_relaxed);
    mgc_log(MGC_VERBOSE_HEAP, "compaction: heap %zu -> %zu words", heap_before,
            (size_t)LOAD_RELAXED(&mgc_rt.heap_words));
    mgc_stw_barrier_release();
  }
  mgc_log(MGC_VERBOSE_HEAP, "compaction: moved %zu words, released %zu pools",
          moved, released);
  if (mgc_rt.params.verify || MGC_DEBUG >= 3)
    mgc_verify_in_stw(d, idx, n);
  mgc_ev_end(d, MGC_EVN_COMPACT);
  mgc_histogram_add(&d->compact_pauses, mgc_now_ns() - t0, false);
}
